// Runs a shell command for tests that inspect binaries or build out of tree.
#pragma once

#include <sys/wait.h>

#include <cstdio>
#include <string>

namespace oar_test {

// Exit status of `cmd` (-1 when it could not run or did not exit normally); stdout and stderr in *output.
inline int run_command(const std::string& cmd, std::string* output) {
  output->clear();
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return -1;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) output->append(buf, n);
  int status = pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace oar_test
