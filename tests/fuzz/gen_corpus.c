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
	struct fuzz_seed seeds[32];
	size_t n = fuzz_seeds(seeds, 32);
	for (size_t i = 0; i < n; i++) {
		char path[4096];
		snprintf(path, sizeof(path), "%s/%s", argv[1], seeds[i].name);
		int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd < 0 || write(fd, seeds[i].bytes, seeds[i].len) != (ssize_t)seeds[i].len) {
			fprintf(stderr, "%s: %s\n", path, strerror(errno));
			return 1;
		}
		close(fd);
		printf("%s (%zu bytes)\n", path, seeds[i].len);
	}
	return 0;
}
