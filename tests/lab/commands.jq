# Turns a resolved topology (resolve.jq) into the commands that build it, one
# per line: "KIND<TAB>NETNS<TAB>COMMAND" with KIND one of
#   netns   a line for the global `ip -batch` that creates the namespaces
#   veth    a line for the global `ip -batch` that creates the veth pairs
#   root    a line for `ip -batch` in the root namespace (management ends)
#   ip      a line for `ip -n NETNS -batch`
#   tc      a line for `tc -n NETNS -batch`
#   sysctl  a key=value for `sysctl -w` inside NETNS
#
# Routes: a host has a default route via its leaf. With $routing "static",
# every router reaches each leaf prefix below it through every downlink that
# leads to it (ECMP when there are several) and everything else through ECMP
# over all its uplinks. With "bgp" the switches get no fabric routes here:
# their FRR (frr.jq) learns them; a leaf only gets a blackhole for its own
# prefix, so that BGP's `network` passes its import check and so that an
# address of the prefix no host has is dropped at the leaf instead of
# bouncing off a spine (the hosts' /32s are more specific and win).
# Args: $mbit, $seed, $routing.
. as $t
| (reduce range(0; $t.tiers|length) as $i ({}; .[$t.tiers[$i]] = $i)) as $tix
| (reduce $t.nodes[] as $n ({}; .[$n.name] = $n)) as $node
| ($t.tiers | index("leaf")) as $leafix
# adjacency: for each node, its ends of links: {if, ip, peer, peer_ip}
| (reduce $t.links[] as $l ({};
     .[$l.a] += [{if: $l.a_if, ip: $l.a_ip, peer: $l.b, peer_ip: $l.b_ip}]
     | .[$l.b] += [{if: $l.b_if, ip: $l.b_ip, peer: $l.a, peer_ip: $l.a_ip}])) as $adj
| def tierof($n): $tix[$node[$n].tier];
  def downs($n): [$adj[$n][]? | select(tierof(.peer) < tierof($n))];
  def ups($n): [$adj[$n][]? | select(tierof(.peer) > tierof($n))];
  def below($n): if $node[$n].tier == "leaf" then [$n]
                 elif tierof($n) < $leafix then []
                 else [downs($n)[] | below(.peer)[]] | unique end;
  def mp($ends): if ($ends|length) == 1 then "via \($ends[0].peer_ip) dev \($ends[0].if)"
                 else [$ends[] | "nexthop via \(.peer_ip) dev \(.if)"] | join(" ") end;
  def routers: $t.nodes[] | select(.tier != "host");
  ($t.nodes[] | "netns\t-\tnetns add \(.netns)"),
  ($t.links[] | "veth\t-\tlink add \(.a_if) netns \($node[.a].netns) type veth peer name \(.b_if) netns \($node[.b].netns)"),
  ($t.lab.mgmt as $m | $t.nodes[] | .name as $n | $m.nodes[$n] // empty | . as $e
   | "veth\t-\tlink add \($e.root_if) type veth peer name \($m.if) netns \($node[$n].netns)",
     "root\t-\taddr add \($m.controller)/32 dev \($e.root_if)",
     "root\t-\tlink set \($e.root_if) up",
     "root\t-\troute add \($e.addr)/32 dev \($e.root_if) scope link",
     "ip\t\($node[$n].netns)\tlink set \($m.if) up",
     "ip\t\($node[$n].netns)\taddr add \($e.addr)/32 dev \($m.if)",
     "ip\t\($node[$n].netns)\troute add \($m.controller)/32 dev \($m.if) scope link"),
  ($t.nodes[] | .netns as $ns | .name as $n
   | ("ip\t\($ns)\tlink set lo up"),
     ($adj[$n][]? | "ip\t\($ns)\tlink set \(.if) up"),
     (if .tier == "host" then
        ($adj[$n][0] // empty) as $e
        | "ip\t\($ns)\taddr add \(.addr)/32 dev \($e.if)",
          "ip\t\($ns)\troute add \($e.peer_ip)/32 dev \($e.if) scope link",
          "ip\t\($ns)\troute add default via \($e.peer_ip) dev \($e.if) src \(.addr)"
      else
        ($adj[$n][] | if $node[.peer].tier == "host" then
            "ip\t\($ns)\taddr add \(.ip)/32 dev \(.if)",
            "ip\t\($ns)\troute add \(.peer_ip)/32 dev \(.if) scope link proto static"
          else "ip\t\($ns)\taddr add \(.ip)/31 dev \(.if)" end),
        (if $routing == "bgp" then
           (if .tier == "leaf" then "ip\t\($ns)\troute add blackhole \(.prefix) proto static" else empty end)
         else
           (if .tier == "leaf" then empty else
              below($n)[] as $lf
              | [downs($n)[] | select(below(.peer) | index($lf))] as $via
              | "ip\t\($ns)\troute add \($node[$lf].prefix) proto static \(mp($via))" end),
           (ups($n) as $u | if ($u|length) > 0 then "ip\t\($ns)\troute add default proto static \(mp($u))" else empty end)
         end)
      end),
     ($adj[$n][]? | "tc\t\($ns)\tqdisc replace dev \(.if) root handle 1: htb default 1",
                    "tc\t\($ns)\tclass add dev \(.if) parent 1: classid 1:1 htb rate \($mbit)mbit ceil \($mbit)mbit quantum 60000"),
     ("sysctl\t\($ns)\tnet.ipv6.conf.all.disable_ipv6=1",
      "sysctl\t\($ns)\tnet.ipv6.conf.default.disable_ipv6=1"),
     (if .tier != "host" then
        "sysctl\t\($ns)\tnet.ipv4.ip_forward=1",
        "sysctl\t\($ns)\tnet.ipv4.fib_multipath_hash_policy=3",
        "sysctl\t\($ns)\tnet.ipv4.fib_multipath_hash_fields=55",
        "sysctl\t\($ns)\tnet.ipv4.fib_multipath_hash_seed=\($seed)",
        "sysctl\t\($ns)\tnet.ipv4.conf.all.rp_filter=2",
        "sysctl\t\($ns)\tnet.ipv4.conf.default.rp_filter=2",
        ($adj[$n][]? | "sysctl\t\($ns)\tnet.ipv4.conf.\(.if | gsub("\\."; "/")).rp_filter=2")
      else empty end))
