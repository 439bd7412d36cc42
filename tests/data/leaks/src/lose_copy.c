/* A shared library that leaks (liblose_copy.so), for many_leaks.cc: a frame in a library the
 * program loads, printed with the library's path as its module. */
#include <string.h>

__attribute__((noinline)) char *lose_copy(const char *text) {
    return strdup(text);
}
