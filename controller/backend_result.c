/*
 * backend_result: see backend_result.h.
 */
#include "controller/backend_result.h"

#include <string.h>

#include "common/util.h"

void backend_result_unsup(struct backend_result *res, const char *sw, unsigned sels, size_t refused,
                          const char *why)
{
    res->refused += refused;
    if (!res->unsupported[0])
        tf_strlcpy(res->unsupported, why, sizeof(res->unsupported));
    for (size_t i = 0; i < res->nunsup; i++)
        if (!strcmp(res->unsup[i].sw, sw)) {
            res->unsup[i].sels |= sels;
            return;
        }
    if (res->nunsup < BACKEND_UNSUP_MAX) {
        tf_strlcpy(res->unsup[res->nunsup].sw, sw, sizeof(res->unsup[0].sw));
        res->unsup[res->nunsup++].sels = sels;
    }
}
