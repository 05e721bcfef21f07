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
 * ExaBGP acks every command (exabgp.api.ack): the text answers of show
 * commands are told apart by a queue of what was sent, in order, so that
 * each line read is handed over with the command it answers. Not
 * thread-safe: the bgp backend calls it under its mutex.
 */
#ifndef TF_BGP_SPEAKER_H
#define TF_BGP_SPEAKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define BGP_SPEAKER_LINE_MAX 8192   /* longest message line kept from the speaker */
#define BGP_SPEAKER_QUEUE_MAX 64    /* runs of commands awaiting their acks */

/* What a run of commands is answered with, before the ack of each. */
enum bgp_speaker_answer { BGP_SPEAKER_ACK, BGP_SPEAKER_SUMMARY, BGP_SPEAKER_RIB_IN, BGP_SPEAKER_RIB_OUT };

struct bgp_speaker {
    char dir[256], exabgp[256];
    pid_t pid;
    bool child;                     /* started by this process (reaped here) */
    int cmd, ev;                    /* the FIFOs, -1 closed */
    char line[BGP_SPEAKER_LINE_MAX];
    size_t linelen;
    struct { uint8_t kind; uint32_t n, tag; } q[BGP_SPEAKER_QUEUE_MAX];   /* awaiting acks */
    unsigned qh, qn;
};

/* One line the speaker wrote: a message of its own (json: a session's
 * state or a peer's update), the end of a command's answer (done or
 * error: its ack), or a line of the answer to the oldest command awaiting
 * one. kind and tag are that command's as sent (ACK and 0 when none). */
struct bgp_speaker_said {
    const char *line;
    bool json, done, error;
    enum bgp_speaker_answer kind;
    uint32_t tag;
};

/* Creates dir (mode 700) and the FIFOs, and opens them. */
int bgp_speaker_open(struct bgp_speaker *s, const char *dir, const char *exabgp, char *err, size_t errlen);
/* Adopts the running speaker when its exabgp.conf is conf (1), else stops
 * it, writes conf and helper.sh and starts one (0: no answer is then
 * awaited); < 0 with err. */
int bgp_speaker_up(struct bgp_speaker *s, const char *conf, char *err, size_t errlen);
bool bgp_speaker_alive(struct bgp_speaker *s);
/* TERM, KILL after 5 s. */
void bgp_speaker_stop(struct bgp_speaker *s);
/* Whole lines to the speaker: -ESRCH when none runs, -ETIMEDOUT when it
 * takes nothing for 3 s. */
int bgp_speaker_send(struct bgp_speaker *s, const char *text, size_t len);
/* bgp_speaker_send of n (>= 1) commands answered as kind; tag (the
 * caller's) comes back with their answers. Beyond BGP_SPEAKER_QUEUE_MAX
 * runs awaiting acks, answers are taken as acks. */
int bgp_speaker_cmd(struct bgp_speaker *s, const char *text, size_t len, enum bgp_speaker_answer kind, uint32_t n,
                    uint32_t tag);
/* Runs of commands not yet acked (0: the speaker has answered everything). */
unsigned bgp_speaker_pending(const struct bgp_speaker *s);
/* Calls fn for every complete line the speaker wrote since the last call. */
void bgp_speaker_read(struct bgp_speaker *s, void (*fn)(void *arg, const struct bgp_speaker_said *w), void *arg);
/* Closes the FIFOs; the speaker keeps running. */
void bgp_speaker_close(struct bgp_speaker *s);

#endif
