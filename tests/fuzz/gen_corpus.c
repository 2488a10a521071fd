/* gen_corpus.c — writes the seed corpus (seeds.h) into a directory, one file per
 * message type. Run through `meson compile -C BUILD fuzz-corpus` (writes the source
 * tree's tests/fuzz/corpus/), then commit the files. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "seeds.h"

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s DIR\n", argv[0]);
		return 2;
	}
	static struct fuzz_seed seeds[32];
	size_t n = fuzz_seeds(seeds, 32);
	int dir = open(argv[1], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0) {
		fprintf(stderr, "%s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	for (size_t i = 0; i < n; i++) {
		int fd = openat(dir, seeds[i].name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0 || write(fd, seeds[i].bytes, seeds[i].len) != (ssize_t)seeds[i].len) {
			fprintf(stderr, "%s/%s: %s\n", argv[1], seeds[i].name, strerror(errno));
			return 1;
		}
		close(fd);
		printf("%s/%s (%zu bytes)\n", argv[1], seeds[i].name, seeds[i].len);
	}
	close(dir);
	return 0;
}
