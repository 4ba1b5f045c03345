// Independent TOON decoder for the end-to-end tests: the TypeScript
// reference implementation (@toon-format/toon), not the Rust crate the
// plugin uses. Reads TOON on stdin, writes the decoded value as JSON.
//
// Numbers become JavaScript numbers, so integers beyond 2^53 lose precision
// here: the tests keep such values out of what they decode with this script.
import { decode } from "@toon-format/toon";

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const text = Buffer.concat(chunks).toString("utf8");
process.stdout.write(JSON.stringify(decode(text, { strict: true })));
