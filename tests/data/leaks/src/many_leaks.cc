/* Leaks of the shapes C++ programs make, for the sanitizers' leak reports in tests/data/leaks/
 * (recorded by tests/corpus/record_sanitizers.sh, which names each file's build and run):
 *   lose_widget:  `new Widget` (16 bytes, direct) holding `new char[32]` (indirect);
 *   lose_arrays:  three `new int[10]` from one call site: one leak of 120 bytes in 3 objects;
 *   lose_vector:  `new std::vector<int>(5)`: the vector (24 bytes, direct) and its buffer
 *                 (20 bytes, indirect, allocated inside libstdc++'s templates);
 *   lose_copy:    strdup() inside a shared library (liblose_copy.so, lose_copy.c): 6 bytes;
 *   lose_in_thread: malloc(24) on another thread (frames of start_thread and clone);
 *   lose_in_jit:  malloc(8) called from code written at run time into an anonymous mapping,
 *                 a frame in no module (x86-64 only; elsewhere a direct call).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <vector>

extern "C" char *lose_copy(const char *text);

struct Widget {
    char *name;
    long id;
};

static __attribute__((noinline)) void lose_widget() {
    Widget *widget = new Widget;
    widget->name = new char[32];
    memset(widget->name, 'w', 32);
    widget->id = 1;
}

static __attribute__((noinline)) void lose_arrays() {
    for (int i = 0; i < 3; i++) {
        int *numbers = new int[10];
        numbers[0] = i;
    }
}

static __attribute__((noinline)) void lose_vector() {
    std::vector<int> *numbers = new std::vector<int>(5);
    (*numbers)[0] = 1;
}

static __attribute__((noinline)) void *lose_in_thread(void *) {
    char *block = static_cast<char *>(malloc(24));
    memset(block, 't', 24);
    return nullptr;
}

extern "C" __attribute__((noinline)) void jit_target() {
    char *block = static_cast<char *>(malloc(8));
    memset(block, 'j', 8);
}

static __attribute__((noinline)) void lose_in_jit() {
#if defined(__x86_64__)
    /* push rbp; mov rbp, rsp; movabs rax, jit_target; call rax; pop rbp; ret */
    unsigned char code[] = {0x55, 0x48, 0x89, 0xe5, 0x48, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0,
                            0xff, 0xd0, 0x5d, 0xc3};
    void (*target)() = jit_target;
    memcpy(code + 6, &target, sizeof target);
    void *page = mmap(nullptr, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    memcpy(page, code, sizeof code);
    reinterpret_cast<void (*)()>(page)();
#else
    jit_target();
#endif
}

int main() {
    lose_widget();
    lose_arrays();
    lose_vector();
    lose_copy("hello");
    pthread_t thread;
    pthread_create(&thread, nullptr, lose_in_thread, nullptr);
    pthread_join(thread, nullptr);
    lose_in_jit();
    return 0;
}
