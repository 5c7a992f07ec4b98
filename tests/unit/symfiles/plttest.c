// Calls through the PLT for the symbolizer's PLT tests (the Makefile builds
// it as a program and as a library, in several PLT layouts): libc functions
// and an IFUNC of its own (an R_*_IRELATIVE entry).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int pt_impl(const char* s) { return (int)strlen(s); }

// The IFUNC's resolver: the loader calls it to fill pt_ifunc's GOT slot.
static int (*pt_resolve(void))(const char*) { return pt_impl; }

int pt_ifunc(const char* s) __attribute__((ifunc("pt_resolve")));

int pt_calls(int argc, char** argv) {
  const char* home = getenv("HOME");
  int n = atoi(argc > 1 ? argv[1] : "1") + pt_ifunc(argv[0]);
  if (home && strcmp(home, "/") == 0) puts(home);
  char* copy = strdup(argv[0]);
  n += (int)strlen(copy);
  free(copy);
  return n;
}

#ifndef PT_LIBRARY
int main(int argc, char** argv) { return pt_calls(argc, argv) == 0; }
#endif
