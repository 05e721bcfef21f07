# Resolves a DESIGN 2.1 topology for the emulated fabric: fills in, where the
# file leaves them out, each node's netns, each leaf's prefix, each host's
# addr, and each link's interface names and addresses. Fields already present
# are kept, so a hand-written file can pin any of them.
#
# Address plan (docs/lab.md): leaf i (1-based, file order) owns 10.X.Y.0/24
# with X.Y = i as a 16-bit number (10.0.1.0/24 for L1); its hosts get .1, .2,
# ... in file order and the leaf answers as the prefix's last usable address
# (.254) on every host port. Router-to-router links get a /31 each from
# 10.254.0.0/16 in file order (a = even address, b = odd).
#
# Routing ($routing "bgp", docs/lab.md "Routing: BGP by default"): every
# switch gets a 4-byte private ASN after RFC 7938 and a router id, recorded in
# .lab.bgp for frr.jq. Leaf i (1-based, file order) is 4201000000 + i; the top
# switch tier shares 4200000000; in a 3-tier fabric the spines of pod p share
# 4200000000 + p (p = 1, 2, ... in order of first appearance). The sharing
# is what keeps paths valley-free: a leaf that re-advertises what one spine
# sent it to another spine of the same group is rejected as an AS loop. A
# spine's pod is its "pod" field, or else the set of leaves below it (the
# spines of one pod serve the same leaves). Router ids are 10.255.X.Y with
# X.Y the switch's 1-based index: an identifier only, never routed.
#
# Args: $prefix (namespace prefix), $mbit, $seed (numbers), $id, $mgmtnet
# (first three octets of the management /24), $mgmtif (root-side if prefix),
# $routing ("bgp" or "static").
def ip2int: split(".") | map(tonumber) | .[0]*16777216 + .[1]*65536 + .[2]*256 + .[3];
def int2ip: [(. / 16777216 | floor) % 256, (. / 65536 | floor) % 256, (. / 256 | floor) % 256, . % 256] | map(tostring) | join(".");
def pfx_base: split("/") | (.[0] | ip2int) as $a | (.[1] | tonumber) as $l
  | ($a - ($a % pow(2; 32 - $l)));
def pfx_gw: split("/") | (.[1] | tonumber) as $l | (. | join("/") | pfx_base) + pow(2; 32 - $l) - 2;
def sanitize: gsub("[^A-Za-z0-9_.-]"; "") | .[0:13];

. as $t
| ($t.tiers // ["host","leaf","spine"]) as $tiers
| (reduce range(0; $tiers|length) as $i ({}; .[$tiers[$i]] = $i)) as $tix
| (reduce $t.nodes[] as $n ({}; .[$n.name] = $n.tier)) as $tierof
# leaf prefixes
| ([$t.nodes[] | select(.tier == "leaf") | .name]) as $leaves
| (reduce range(0; $leaves|length) as $i ({};
     .[$leaves[$i]] = ((($i + 1) / 256 | floor | tostring) as $x | (($i + 1) % 256 | tostring) as $y
                       | "10.\($x).\($y).0/24"))) as $autopfx
| (reduce $t.nodes[] as $n ({}; if $n.tier == "leaf" then .[$n.name] = ($n.prefix // $autopfx[$n.name]) else . end)) as $pfx
# host -> leaf (first link to a leaf)
| (reduce $t.links[] as $l ({};
     if $tierof[$l.a] == "host" and $tierof[$l.b] == "leaf" and (.[$l.a] == null) then .[$l.a] = $l.b
     elif $tierof[$l.b] == "host" and $tierof[$l.a] == "leaf" and (.[$l.b] == null) then .[$l.b] = $l.a
     else . end)) as $hleaf
| (reduce ($t.nodes[] | select(.tier == "host") | .name) as $h ({cnt: {}, addr: {}};
     $hleaf[$h] as $lf
     | if $lf == null then .
       else ((.cnt[$lf] // 0) + 1) as $k
       | .cnt[$lf] = $k
       | .addr[$h] = (($pfx[$lf] | pfx_base) + $k | int2ip) end) | .addr) as $autoaddr
| (reduce $t.nodes[] as $n ({}; if $n.tier == "host" then .[$n.name] = ($n.addr // $autoaddr[$n.name]) else . end)) as $addr
| $t
| .tiers = $tiers
| .nodes = [.nodes[] | .netns = (.netns // ($prefix + .name))
            | if .tier == "leaf" then .prefix = $pfx[.name] else . end
            | if .tier == "host" then (if $addr[.name] then .addr = $addr[.name] else . end) else . end]
# interface names: hosts eth0, eth1...; routers the peer's name (suffix on clash)
| .links = (reduce range(0; .links|length) as $i ({links: .links, used: {}, rl: 0};
     .links[$i] as $l
     | def ifname($self; $peer; $given):
         if $given then $given
         elif $tierof[$self] == "host" then "eth\((.used[$self] // {}) | length)"
         else ($peer | sanitize) as $b
           | if ((.used[$self] // {})[$b]) then "\($b | .[0:10])-\((.used[$self] | length))" else $b end end;
     ifname($l.a; $l.b; $l.a_if) as $aif | .used[$l.a][$aif] = true
     | ifname($l.b; $l.a; $l.b_if) as $bif | .used[$l.b][$bif] = true
     | .links[$i].a_if = $aif | .links[$i].b_if = $bif
     | if $tierof[$l.a] == "host" or $tierof[$l.b] == "host" then
         (if $tierof[$l.a] == "host" then $l.a else $l.b end) as $h
         | (if $tierof[$l.a] == "host" then $l.b else $l.a end) as $lf
         | ($pfx[$lf] | if . then (pfx_gw | int2ip) else null end) as $gw
         | .links[$i].a_ip = ($l.a_ip // (if $l.a == $h then $addr[$h] else $gw end))
         | .links[$i].b_ip = ($l.b_ip // (if $l.b == $h then $addr[$h] else $gw end))
       else
         (184418304 + 2 * .rl) as $base   # 10.254.0.0
         | .links[$i].a_ip = ($l.a_ip // ($base | int2ip))
         | .links[$i].b_ip = ($l.b_ip // ($base + 1 | int2ip))
         | .rl += 1
       end) | .links)
# management network: every switch gets a veth "mgmt0" to the root namespace,
# where all the root-side ends carry the controller address $mgmtnet.1
| ([.nodes[] | select(.tier != "host") | .name]) as $sw
# The emulated links run at the shaped rate, so that is their capacity (the
# controller computes utilisation from it); the file's figure is kept aside.
| .links = [.links[] | (if .gbps != null and .gbps != ($mbit / 1000) then .nominal_gbps = .gbps else . end) | .gbps = ($mbit / 1000)]
| .lab = {id: $id, netns_prefix: $prefix, mbit: $mbit, seed: $seed, routing: $routing,
          mgmt: {controller: "\($mgmtnet).1", if: "mgmt0",
                 nodes: (reduce range(0; $sw|length) as $i ({};
                   .[$sw[$i]] = {addr: "\($mgmtnet).\($i + 2)", root_if: "\($mgmtif)\($i + 1)"}))}}
| if $routing != "bgp" then . else
    . as $r
    | ($r.tiers | map(select(. != "host")) | last) as $top
    | ([$r.nodes[] | select(.tier == "leaf") | .name]) as $lvs
    # leaves below each middle-tier switch, for spines without a "pod" field
    | (reduce $r.links[] as $l ({};
         if $tierof[$l.a] == "leaf" then .[$l.b] += [$l.a]
         elif $tierof[$l.b] == "leaf" then .[$l.a] += [$l.b] else . end)) as $leavesof
    | ([$r.nodes[] | select(.tier != "host" and .tier != "leaf" and .tier != $top)
        | if .pod != null then "pod:\(.pod)" else ($leavesof[.name] // [] | sort | join(",")) end]
       | reduce .[] as $k ([]; if index([$k]) then . else . + [$k] end)) as $pods
    | .lab.bgp = {
        asn: (reduce $r.nodes[] as $n ({};
          if $n.tier == "host" then .
          elif $n.tier == "leaf" then .[$n.name] = 4201000000 + ($lvs | index($n.name)) + 1
          elif $n.tier == $top then .[$n.name] = 4200000000
          else (if $n.pod != null then "pod:\($n.pod)" else ($leavesof[$n.name] // [] | sort | join(",")) end) as $k
            | .[$n.name] = 4200000000 + ($pods | index($k)) + 1 end)),
        router_id: (reduce range(0; $sw|length) as $i ({};
          .[$sw[$i]] = ("10.255.\(($i + 1) / 256 | floor).\(($i + 1) % 256)")))}
  end
