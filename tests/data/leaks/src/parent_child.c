#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
__attribute__((noinline)) void *lose(size_t n) { return malloc(n); }
int main(int argc, char **argv) {
  if (argc > 1) { lose(24); return 0; }   /* the child: 24 bytes definitely lost */
  lose(64);                               /* the parent: 64 bytes definitely lost */
  pid_t pid = fork();
  if (pid == 0) { execl(argv[0], argv[0], "child", (char *)0); _exit(1); }
  waitpid(pid, 0, 0);
  return 0;
}
