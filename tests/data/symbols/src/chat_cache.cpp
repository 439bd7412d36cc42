// A small image cache, built with -g by gcc and clang for memdash's symbolication tests.
// No headers, so that the same file builds for Linux and for macOS without an SDK.
extern "C" void *malloc(unsigned long size);
extern "C" void *memcpy(void *to, const void *from, unsigned long size);
extern "C" void free(void *block);

namespace chat {

struct ImageCache {
    unsigned char *decode(const unsigned char *data, unsigned long size);
};

static inline __attribute__((always_inline)) unsigned long scaled_size(unsigned long size) {
    unsigned long doubled = size * 2;
    if (doubled < 64)
        doubled = 64;
    return doubled + 16;
}

__attribute__((noinline)) unsigned char *ImageCache::decode(const unsigned char *data,
                                                            unsigned long size) {
    unsigned long n = scaled_size(size);
    unsigned char *out = static_cast<unsigned char *>(malloc(n));
    memcpy(out, data, size);
    return out;
}

}  // namespace chat

extern "C" __attribute__((noinline)) unsigned char *store_image(const unsigned char *data,
                                                                 unsigned long size) {
    chat::ImageCache cache;
    unsigned char *decoded = cache.decode(data, size);
    return decoded;
}

int main(int argc, char **argv) {
    unsigned char *image = store_image(reinterpret_cast<const unsigned char *>(argv[0]),
                                       static_cast<unsigned long>(argc));
    free(image);
    return 0;
}
