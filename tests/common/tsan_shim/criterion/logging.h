/* logging.h (shim) — see criterion.h in this directory. */
#pragma once
#include "criterion.h"
