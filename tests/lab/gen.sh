#!/usr/bin/env bash
# Fallback topology generators for the lab, used only when tierflow-topo has
# not been built: prints DESIGN 2.1 JSON for
#   leafspine:leaves=L,spines=S,hosts=H,gbps=G   (H hosts per leaf)
#   fattree:k=K,gbps=G                           (K-ary fat tree: edge = leaf,
#                                                 aggregation = spine, core = superspine)
# Names follow tierflow-topo's: H1.. hosts, L1.. leaves, S1.. spines, SS1.. cores.
set -euo pipefail
spec=$1
kind=${spec%%:*}; args=${spec#*:}; [ "$args" = "$spec" ] && args=
declare -A A=([leaves]=2 [spines]=4 [hosts]=4 [gbps]=100 [k]=4)
IFS=, read -ra kv <<< "$args"
for p in "${kv[@]}"; do
  [[ "$p" =~ ^([a-z]+)=([0-9.]+)$ ]] || { echo "gen.sh: bad generator argument '$p' in '$spec'" >&2; exit 2; }
  A[${BASH_REMATCH[1]}]=${BASH_REMATCH[2]}
done
g=${A[gbps]}
nodes=() links=()
node() { nodes+=("{\"name\":\"$1\",\"tier\":\"$2\"}"); }
link() { links+=("{\"a\":\"$1\",\"b\":\"$2\",\"gbps\":$g}"); }
case "$kind" in
  leafspine)
    L=${A[leaves]} S=${A[spines]} H=${A[hosts]}
    tiers='["host","leaf","spine"]'; name="leafspine-${L}x${S}x${H}"
    for ((h = 1; h <= L * H; h++)); do node "H$h" host; done
    for ((l = 1; l <= L; l++)); do node "L$l" leaf; done
    for ((s = 1; s <= S; s++)); do node "S$s" spine; done
    for ((h = 1; h <= L * H; h++)); do link "H$h" "L$(( (h - 1) / H + 1 ))"; done
    for ((l = 1; l <= L; l++)); do for ((s = 1; s <= S; s++)); do link "L$l" "S$s"; done; done
    ;;
  fattree)
    k=${A[k]}; h=$((k / 2))
    (( k >= 2 && k % 2 == 0 )) || { echo "gen.sh: fattree k must be even and >= 2" >&2; exit 2; }
    tiers='["host","leaf","spine","superspine"]'; name="fattree-k$k"
    for ((i = 1; i <= k * k * k / 4; i++)); do node "H$i" host; done
    for ((i = 1; i <= k * h; i++)); do node "L$i" leaf; done
    for ((i = 1; i <= k * h; i++)); do node "S$i" spine; done
    for ((i = 1; i <= h * h; i++)); do node "SS$i" superspine; done
    for ((i = 1; i <= k * k * k / 4; i++)); do link "H$i" "L$(( (i - 1) / h + 1 ))"; done
    for ((p = 0; p < k; p++)); do
      for ((e = 0; e < h; e++)); do for ((a = 0; a < h; a++)); do
        link "L$((p * h + e + 1))" "S$((p * h + a + 1))"; done; done
    done
    for ((p = 0; p < k; p++)); do
      for ((a = 0; a < h; a++)); do for ((c = 0; c < h; c++)); do
        link "S$((p * h + a + 1))" "SS$((a * h + c + 1))"; done; done
    done
    ;;
  *) echo "gen.sh: unknown generator '$kind' (leafspine, fattree; build tierflow-topo for more)" >&2; exit 2 ;;
esac
j() { local IFS=,; echo "$*"; }
printf '{"name":"%s","tiers":%s,"nodes":[%s],"links":[%s]}\n' "$name" "$tiers" "$(j "${nodes[@]}")" "$(j "${links[@]}")"
