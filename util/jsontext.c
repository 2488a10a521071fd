/* jsontext.c — checks on JSON text (jsontext.h). */
#include "jsontext.h"

#include <string.h>

bool json_text_holds_nul(const char *buf, size_t len)
{
	bool in_string = false;
	for (size_t i = 0; i < len; i++) {
		if (!in_string) {
			in_string = buf[i] == '"';
		} else if (buf[i] == '"') {
			in_string = false;
		} else if (buf[i] == '\0') {
			return true;
		} else if (buf[i] == '\\' && i + 1 < len) {
			if (buf[i + 1] == 'u' && i + 5 < len && memcmp(buf + i + 2, "0000", 4) == 0)
				return true;
			i++; /* the escaped character: \" does not end the string */
		}
	}
	return false;
}

size_t json_text_control_at(const char *buf, size_t len)
{
	bool in_string = false;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)buf[i];
		if (c >= 1 && c < 0x20 && (in_string || (c != '\t' && c != '\n' && c != '\r')))
			return i;
		if (!in_string)
			in_string = c == '"';
		else if (c == '"')
			in_string = false;
		else if (c == '\\' && i + 1 < len && (unsigned char)buf[i + 1] >= 0x20)
			i++; /* the escaped character: \" does not end the string */
	}
	return len;
}
