// heapsample: heapdemo.c's work, then tcmalloc's own heap sample and growth stacks as a C++
// server serves them (MallocExtension::GetHeapSample: `heap_v2/<rate>`; GetHeapGrowthStacks:
// `growthz`), written to the files named on the command line (../record_gperftools.sh).
#include <gperftools/malloc_extension.h>

#include <fstream>
#include <string>

extern "C" int heapdemo_main(void);

static void write(const char* name, const std::string& text) {
  std::ofstream(name, std::ios::binary) << text;
}

int main(int argc, char** argv) {
  heapdemo_main();
  std::string sample, growth;
  MallocExtension::instance()->GetHeapSample(&sample);
  MallocExtension::instance()->GetHeapGrowthStacks(&growth);
  if (argc > 2) {
    write(argv[1], sample);
    write(argv[2], growth);
  }
  return 0;
}
