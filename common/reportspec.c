/*
 * reportspec: see reportspec.h. The source names are one table indexed by
 * the enum, so a name and its value cannot drift apart.
 */
#include "common/reportspec.h"

#include <errno.h>
#include <string.h>

static const char *const source_names[REPORTSPEC_SRC_N] = {
    [REPORTSPEC_SRC_PCAP] = "pcap", [REPORTSPEC_SRC_ERSPAN] = "erspan", [REPORTSPEC_SRC_SFLOW] = "sflow"};

const char *reportspec_source_name(int source)
{
    return source >= 0 && source < REPORTSPEC_SRC_N ? source_names[source] : "?";
}

int reportspec_source_parse(const char *name)
{
    for (int i = 0; i < REPORTSPEC_SRC_N; i++)
        if (!strcmp(name, source_names[i]))
            return i;
    return -EINVAL;
}

bool reportspec_name_ok(const char *s, size_t max)
{
    size_t n = strnlen(s, max + 1);
    if (n == 0 || n > max)
        return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] <= 0x20 || (unsigned char)s[i] >= 0x7f)
            return false;
    return true;
}

double reportspec_rate_bound(double link_bps)
{
    return REPORTSPEC_LINK_SLACK * link_bps;
}

double reportspec_pkts_bound(double link_bps, double interval_s)
{
    return REPORTSPEC_LINK_SLACK * link_bps * interval_s / REPORTSPEC_MIN_FRAME_BITS;
}

double reportspec_backlog_bound(double link_bps)
{
    return REPORTSPEC_MAX_QUEUE_S * link_bps / 8;
}

double reportspec_carrier_bound(double interval_s)
{
    return REPORTSPEC_MAX_CARRIER_HZ * interval_s;
}
