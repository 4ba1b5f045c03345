// Preloaded into the conformance suite's reference servers (node --import):
// they call `app.listen(PORT)` with no host, which binds every interface;
// the e2e suite binds loopback only, so a listen without a host gets
// 127.0.0.1.
import net from "node:net";

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  const port = args[0];
  const portOnly = typeof port === "number" || (typeof port === "string" && /^\d+$/.test(port));
  if (portOnly && typeof args[1] !== "string") args.splice(1, 0, "127.0.0.1");
  return listen.apply(this, args);
};
