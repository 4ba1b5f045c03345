"""What the module does for proxy-wasm hosts other than Envoy, seen from
the host: APISIX (wasm-nginx-module) runs a plugin's body callbacks only
after it sets `wasm_process_req_body` / `wasm_process_resp_body` in the
matching header callback. The module asks once, at configuration, whether
the host answers Envoy's `plugin_vm_id`; APISIX refuses every property read
outside a request. On such a host the flags are set exactly where a body is
read; on Envoy never (each is a filter-state write Envoy pays for and nobody
reads). Either way the same streams are read and rewritten."""

from __future__ import annotations

import pytest

from test_untouched import exchange

FLAGS = ("wasm_process_req_body", "wasm_process_resp_body")


@pytest.mark.parametrize("apisix", [False, True], ids=["envoy", "apisix"])
def test_body_flags_only_where_the_host_needs_them(plugin, apisix):
    cases = [
        # (method, extra headers, request flag, response flag, unchanged)
        ("tools/call", [], True, True, False),
        # MCP 2026-07-28: a listing named in Mcp-Method is decided at its headers.
        ("tools/list", [("mcp-method", "tools/list")], False, False, True),
        # An earlier client's listing: its request is read, its response not.
        ("tools/list", [], True, False, True),
    ]
    for method, extra, request_flag, response_flag, unchanged in cases:
        _, calls = exchange(plugin, {}, method, extra, unchanged, root_property_reads=not apisix)
        flags = [(c.detail, c.callback) for c in calls if c.name == "proxy_set_property" and c.detail in FLAGS]
        want = []
        if apisix and request_flag:
            want.append((FLAGS[0], "on_request_headers"))
        if apisix and response_flag:
            want.append((FLAGS[1], "on_response_headers"))
        assert flags == want, (method, extra)
