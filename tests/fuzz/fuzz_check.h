/* fuzz_check.h — the fuzz targets' one assertion: CHECK(cond) names the failed condition,
 * the target (__FILE__) and the line on stderr, then aborts (a libFuzzer finding, or a
 * corpus test's crash). Never compiled out. */
#pragma once

#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond)                                                                        \
	do {                                                                               \
		if (!(cond)) {                                                             \
			fprintf(stderr, "%s: check failed: %s (line %d)\n", __FILE__, #cond, \
				__LINE__);                                                 \
			abort();                                                           \
		}                                                                          \
	} while (0)
