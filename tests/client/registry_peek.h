/* registry_peek.h — see registry_peek.c. */
#pragma once

#include <stddef.h>

const char *peek_registry_name(int code); /* NULL if unknown */
int peek_registry_count(void);
void peek_host_config(size_t out[4]); /* sizeof, offsets of depth, spin_ns, nonblock */
