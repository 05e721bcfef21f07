/* The 2-leaf x 4-spine topology with interface and address fields, as the
 * emulated fabric writes them, shared by the planbuild unit test and
 * tests/tools/plan_steps: hosts H1 (10.0.1.1, under L1) and H2 (10.0.2.1,
 * under L2); uplink k of leaf l is eth<k>, 10.<l>.<k>.1 <-> 10.<l>.<k>.0. */
#ifndef TF_TESTS_TOPO_2X4_H
#define TF_TESTS_TOPO_2X4_H

#include <stdio.h>

/* Writes the topology's JSON into buf (8 KiB is plenty). */
static inline void topo_2x4_json(char *buf, size_t len)
{
    size_t n = 0;
    n += (size_t)snprintf(buf + n, len - n,
        "{\"name\": \"t\", \"tiers\": [\"host\", \"leaf\", \"spine\"], \"nodes\": ["
        "{\"name\": \"H1\", \"tier\": \"host\", \"addr\": \"10.0.1.1\"},"
        "{\"name\": \"H2\", \"tier\": \"host\", \"addr\": \"10.0.2.1\"},"
        "{\"name\": \"L1\", \"tier\": \"leaf\", \"prefix\": \"10.0.1.0/24\"},"
        "{\"name\": \"L2\", \"tier\": \"leaf\", \"prefix\": \"10.0.2.0/24\"},"
        "{\"name\": \"S1\", \"tier\": \"spine\"}, {\"name\": \"S2\", \"tier\": \"spine\"},"
        "{\"name\": \"S3\", \"tier\": \"spine\"}, {\"name\": \"S4\", \"tier\": \"spine\"}],"
        "\"links\": [{\"a\": \"H1\", \"b\": \"L1\", \"gbps\": 100}, {\"a\": \"H2\", \"b\": \"L2\", \"gbps\": 100}");
    for (int l = 1; l <= 2; l++)
        for (int s = 1; s <= 4; s++)
            n += (size_t)snprintf(buf + n, len - n,
                ", {\"a\": \"L%d\", \"b\": \"S%d\", \"gbps\": 100, \"a_if\": \"eth%d\", \"b_if\": \"l%d\","
                " \"a_ip\": \"10.%d.%d.1\", \"b_ip\": \"10.%d.%d.0\"}", l, s, s, l, l, s, l, s);
    snprintf(buf + n, len - n, "]}\n");
}

#endif
