/*
 * backend_cfg: see backend_cfg.h. The bounds are those of owner.h's layout:
 * a range too small for it, or reaching into the kernel's tables or
 * protocols, would make tierflow's state collide with another's.
 */
#include "controller/backend_cfg.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

void backend_cfg_default(struct backend_cfg *c)
{
    memset(c, 0, sizeof(*c));
    c->prio_min = OWNER_PRIO_MIN_DEFAULT;
    c->prio_max = OWNER_PRIO_MAX_DEFAULT;
    c->table_base = OWNER_TABLE_BASE_DEFAULT;
    c->rt_proto = OWNER_PROTO_DEFAULT;
}

int backend_cfg_check(const struct backend_cfg *c, char *err, size_t errlen)
{
    if (c->prio_max < c->prio_min || c->prio_min == 0 ||
        c->prio_max - c->prio_min + 1 < OWNER_PRIO_SPAN)
        snprintf(err, errlen, "rule priorities %u-%u: need 1.. and at least %d of them",
                 c->prio_min, c->prio_max, OWNER_PRIO_SPAN);
    else if (c->table_base < OWNER_TABLE_BASE_MIN || c->table_base > UINT32_MAX - OWNER_TABLE_SPAN)
        snprintf(err, errlen, "table base %u: must be %u..%u", c->table_base, OWNER_TABLE_BASE_MIN,
                 UINT32_MAX - OWNER_TABLE_SPAN);
    else if (c->rt_proto <= OWNER_PROTO_KERNEL_MAX)
        snprintf(err, errlen, "route protocol %u is reserved by the kernel", c->rt_proto);
    else
        return 0;
    return -EINVAL;
}
