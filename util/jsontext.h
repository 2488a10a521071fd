/* jsontext.h — checks on JSON text before a parser turns it into C strings.
 *
 * cJSON gives strings as NUL-terminated C strings: a string holding U+0000 (the
 * escape \u0000, or a raw NUL byte) would end there, and what follows it would be
 * dropped unseen (a plan "poll\u0000junk" taken for "poll", a socket path cut short).
 * garudad's control socket and config file refuse such text instead. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* The offset of the first control character (a byte 0x01..0x1f) that JSON text does
 * not allow: any in a string (RFC 8259 asks for an escape), and any but tab, newline and
 * carriage return between tokens; len when there is none. cJSON takes both (as
 * whitespace, and as the string's own bytes). NUL is left to json_text_holds_nul(). */
size_t json_text_control_at(const char *buf, size_t len);

/* Whether a string of the JSON text buf (len bytes; well-formed or not) holds U+0000,
 * as the escape \u0000 or as a raw NUL byte. */
bool json_text_holds_nul(const char *buf, size_t len);
