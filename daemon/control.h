/* control.h — the control plane's entry points for main: accept a control
 * connection, close them all at exit. The rest is in control_internal.h. Loop thread
 * only. */
#pragma once

#include <stdint.h>

#include "daemon.h"

void control_on_accept(struct loop_watch *w, void *data, uint32_t events);
void control_close_all(struct daemon *d);
