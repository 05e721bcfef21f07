/*
 * version: the build's version (git describe --always --dirty, or the
 * release number without git), the one string --version, the logs, the
 * API's status and /metrics print.
 *
 * It lives in one object (common/version.c) that the Makefile rebuilds
 * whenever the version changes: make does not track compiler flags, and
 * with the string compiled into every object that printed it, a rebuild
 * after a commit kept the version of the build before.
 */
#ifndef TF_VERSION_H
#define TF_VERSION_H

extern const char tf_version[];

#endif
