/* jsontext.h — checks on JSON text before a parser turns it into C strings.
 *
 * cJSON gives strings as NUL-terminated C strings: a string holding U+0000 (the
 * escape \u0000, or a raw NUL byte) would end there, and what follows it would be
 * dropped unseen (a plan "poll\u0000junk" taken for "poll", a socket path cut short).
 * garudad's control socket and config file refuse such text instead. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* Whether a string of the JSON text buf (len bytes; well-formed or not) holds U+0000,
 * as the escape \u0000 or as a raw NUL byte. */
bool json_text_holds_nul(const char *buf, size_t len);
