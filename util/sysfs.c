/* sysfs.c — see sysfs.h. */
#include "sysfs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <unistd.h>

#include "cleanup.h"

/* Decimal digits at *s up to max: the value, *s past them; false when there are none
 * or the value passes max. */
static bool digits(const char **s, uint64_t max, uint64_t *out)
{
	const char *p = *s;
	uint64_t v = 0;
	if (*p < '0' || *p > '9')
		return false;
	for (; *p >= '0' && *p <= '9'; p++) {
		unsigned d = (unsigned)(*p - '0');
		if (d > max || v > (max - d) / 10)
			return false;
		v = v * 10 + d;
	}
	*s = p;
	*out = v;
	return true;
}

int64_t sysfs_parse_uint(const char *text, uint64_t max)
{
	uint64_t v;
	if (max > INT64_MAX || !digits(&text, max, &v))
		return -1;
	if (*text == '\n')
		text++;
	return *text ? -1 : (int64_t)v;
}

int64_t sysfs_read_uint(const char *path, uint64_t max)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	char buf[64];
	ssize_t n;
	do
		n = read(fd, buf, sizeof(buf) - 1);
	while (n < 0 && errno == EINTR);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	return sysfs_parse_uint(buf, max);
}

int sysfs_parse_cpulist(const char *s, cpu_set_t *set)
{
	CPU_ZERO(set);
	while (*s && *s != '\n') {
		uint64_t a, b;
		if (!digits(&s, CPU_SETSIZE - 1, &a))
			return -1;
		b = a;
		if (*s == '-') {
			s++;
			if (!digits(&s, CPU_SETSIZE - 1, &b) || b < a)
				return -1;
		}
		for (uint64_t c = a; c <= b; c++)
			CPU_SET((int)c, set);
		if (*s == ',')
			s++;
		else if (*s && *s != '\n')
			return -1;
	}
	return CPU_COUNT(set);
}
