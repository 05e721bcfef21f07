/*
 * version: see version.h.
 */
#include "common/version.h"

const char tf_version[] = TF_VERSION;
