/*
 * bgp_speaker: the ExaBGP process the bgp backend drives, and the channel to
 * its process API. In its folder: exabgp.conf (written by the caller's text),
 * helper.sh (the process ExaBGP runs: it copies the FIFO cmd to ExaBGP and
 * ExaBGP's messages to the FIFO ev), exabgp.pid and exabgp.log (ExaBGP's).
 *
 * Invariants: the speaker runs in its own session and outlives tierflowd; a
 * running speaker whose exabgp.conf is the text asked for is adopted, never
 * restarted; nothing is written to cmd while no speaker runs (it would be
 * replayed to the next one), and both FIFOs are emptied before one starts.
 * ExaBGP acks every command (exabgp.api.ack). Not thread-safe: the bgp
 * backend calls it under its mutex.
 */
#ifndef TF_BGP_SPEAKER_H
#define TF_BGP_SPEAKER_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define BGP_SPEAKER_LINE_MAX 8192   /* longest message line kept from the speaker */

struct bgp_speaker {
    char dir[256], exabgp[256];
    pid_t pid;
    bool child;                     /* started by this process (reaped here) */
    int cmd, ev;                    /* the FIFOs, -1 closed */
    char line[BGP_SPEAKER_LINE_MAX];
    size_t linelen;
};

/* Creates dir (mode 700) and the FIFOs, and opens them. */
int bgp_speaker_open(struct bgp_speaker *s, const char *dir, const char *exabgp, char *err, size_t errlen);
/* Adopts the running speaker when its exabgp.conf is conf (1), else stops
 * it, writes conf and helper.sh and starts one (0); < 0 with err. */
int bgp_speaker_up(struct bgp_speaker *s, const char *conf, char *err, size_t errlen);
bool bgp_speaker_alive(struct bgp_speaker *s);
/* TERM, KILL after 5 s. */
void bgp_speaker_stop(struct bgp_speaker *s);
/* Whole lines to the speaker: -ESRCH when none runs, -ETIMEDOUT when it
 * takes nothing for 3 s. */
int bgp_speaker_send(struct bgp_speaker *s, const char *text, size_t len);
/* Calls fn for every complete line the speaker wrote since the last call. */
void bgp_speaker_read(struct bgp_speaker *s, void (*fn)(void *arg, const char *line), void *arg);
/* Closes the FIFOs; the speaker keeps running. */
void bgp_speaker_close(struct bgp_speaker *s);

#endif
