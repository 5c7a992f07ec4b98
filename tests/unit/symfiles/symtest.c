// A small shared object for the symbolizer's debug-file tests
// (tests/unit/symbolizer_debug_test.cc). The Makefile builds it with -g,
// then strips copies of it: st_hidden is static, so only .symtab (the debug
// file's, once stripped) names it; st_inlined is always inlined into
// st_exported, so only DWARF knows it is there. With -DST_REBUILT it is
// the same library "rebuilt": another build id and st_hidden elsewhere.
volatile int st_sink;

#ifdef ST_REBUILT
/* The "rebuilt" copy: new code ahead of st_hidden moves it, and the build id
 * changes. */
__attribute__((noinline)) int st_added(int x)
{
	for (int i = 0; i < 32; ++i) st_sink = st_sink * 3 + x + i;
	return st_sink;
}
#endif

static __attribute__((noinline)) int st_hidden(int x) {
  for (int i = 0; i < 8; ++i) st_sink = st_sink + x * i;
  return st_sink;
}

static inline __attribute__((always_inline)) int st_inlined(int x) {
  for (int i = 0; i < 4; ++i) st_sink = st_sink ^ (x + i);
  return st_sink;
}

int st_exported(int x) { return st_hidden(x) + st_inlined(x); }
