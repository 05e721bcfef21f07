/*
 * owner: the numbers that mark what tierflow owns in a switch's kernel, in
 * one place (docs/routing.md, "Numbers tierflow owns"). Constants only.
 *
 * "Owned" means, and nothing else is ever read into a plan, changed or
 * deleted by any backend:
 *   - a rule whose priority lies in [prio_min, prio_max], whose protocol
 *     (FRA_PROTOCOL) is the route protocol and whose table is owned;
 *   - a route whose protocol is the route protocol and whose table lies in
 *     [table_base, table_base + OWNER_TABLE_SPAN).
 * prio_min, prio_max, table_base and the protocol are configured
 * (backend_cfg, config keys backend_options.*); the defaults and the
 * spans are here. backend_open refuses a configuration that breaks the
 * bounds below; backend_apply refuses a plan outside the ranges.
 *
 * Why these numbers:
 *   - priorities 20000-29999: above the kernel's and FRR's own rules (0,
 *     pbrd around 300 and up, 32766 main, 32767 default), below main, so a
 *     pin is looked at before the main table;
 *   - tables 7700-7955: clear of the kernel's 0-255 (local, main,
 *     default) and below FRR pbrd's (from 10000); FRR's flowspec range
 *     (256-100255) covers them, but flowspec does not install on Linux FRR
 *     8.4 (docs/bgp.md), and the table ownership check is AND the protocol;
 *   - protocol 77: unused in /etc/iproute2/rt_protos and by FRR (11,
 *     186-197); 0-4 are the kernel's (unspec, redirect, kernel, boot,
 *     static).
 * Layout inside the spans (planbuild.h): the first OWNER_CLASS_TABLE_OFF
 * tables are one per uplink, the rest one per traffic class; the first
 * OWNER_CLASS_PRIO_OFF priorities are flow pins, the next ones class rules.
 */
#ifndef TF_OWNER_H
#define TF_OWNER_H

#define OWNER_PRIO_MIN_DEFAULT   20000
#define OWNER_PRIO_MAX_DEFAULT   29999
#define OWNER_PRIO_SPAN          512    /* prio_max - prio_min + 1 must be >= this */
#define OWNER_CLASS_PRIO_OFF     256    /* class rules after every flow rule */

#define OWNER_TABLE_BASE_DEFAULT 7700
#define OWNER_TABLE_BASE_MIN     256    /* tables 0-255 are the kernel's */
#define OWNER_TABLE_SPAN         256    /* tables owned: [base, base + span) */
#define OWNER_CLASS_TABLE_OFF    128    /* per-uplink tables below, class tables from here */

#define OWNER_PROTO_DEFAULT      77
#define OWNER_PROTO_KERNEL_MAX   4      /* 0-4: unspec, redirect, kernel, boot, static */

#endif
