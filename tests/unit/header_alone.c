/* The public header compiles on its own, with nothing included before it. */
#include "precompress.h"

#include "precompress.h" /* and twice: include guard */

int main(void) { return 0; }
