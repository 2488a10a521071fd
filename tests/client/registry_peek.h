/* registry_peek.h — see registry_peek.c. */
#pragma once

#include <stddef.h>

const char *peek_registry_name(int code); /* NULL if unknown */
int peek_registry_count(void);
