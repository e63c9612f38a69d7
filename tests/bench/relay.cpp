// The floor of a hop: a process that only copies bytes between two pipes, with no parsing —
// stdin → the child's stdin, the child's stdout → stdout. The benchmark suite puts one or two of
// these between a client and a server to measure what a hop costs at the least, beside mcpmux.
// With --listen, the client side is the first connection accepted on a Unix socket instead of
// stdin/stdout: the floor for a client on a socket, as mcpmux's own socket clients are.
//
// usage: relay [--listen SOCKET] COMMAND [ARGS...]   (the child's stderr is inherited)
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace {

// Copies what one read returns; false at end of input or on an error.
bool copy_once(int from, int to) {
  static char buf[1 << 16];
  const ssize_t n = read(from, buf, sizeof buf);
  if (n < 0) return errno == EINTR || errno == EAGAIN;
  if (n == 0) return false;
  for (ssize_t done = 0; done < n;) {
    const ssize_t w = write(to, buf + done, static_cast<size_t>(n - done));
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    done += w;
  }
  return true;
}

}  // namespace

// Listens on `path` and returns the first connection (-1 on failure). Created before the
// child starts, so a client may connect as soon as the path exists.
int accept_one(const char* path) {
  const int l = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  if (l < 0 || std::strlen(path) >= sizeof a.sun_path) return -1;
  std::strcpy(a.sun_path, path);
  unlink(path);
  if (bind(l, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(l, 1) != 0) return -1;
  const int c = accept4(l, nullptr, nullptr, SOCK_CLOEXEC);
  close(l);
  unlink(path);
  return c;
}

int main(int argc, char** argv) {
  const char* listen_path = nullptr;
  if (argc >= 3 && std::strcmp(argv[1], "--listen") == 0) {
    listen_path = argv[2];
    argv += 2;
    argc -= 2;
  }
  if (argc < 2) {
    std::fprintf(stderr, "usage: relay [--listen SOCKET] COMMAND [ARGS...]\n");
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  int client_in = 0, client_out = 1;
  if (listen_path) {
    client_in = client_out = accept_one(listen_path);
    if (client_in < 0) {
      std::perror("relay: listen");
      return 1;
    }
  }
  int to_child[2], from_child[2];
  if (pipe2(to_child, O_CLOEXEC) != 0 || pipe2(from_child, O_CLOEXEC) != 0) return 1;
  const pid_t pid = fork();
  if (pid < 0) return 1;
  if (pid == 0) {
    dup2(to_child[0], 0);
    dup2(from_child[1], 1);
    execvp(argv[1], argv + 1);
    std::perror("relay: exec");
    _exit(127);
  }
  close(to_child[0]);
  close(from_child[1]);
  pollfd fds[2] = {{client_in, POLLIN, 0}, {from_child[0], POLLIN, 0}};
  for (;;) {
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    if (fds[0].revents && !copy_once(client_in, to_child[1])) break;
    if (fds[1].revents && !copy_once(from_child[0], client_out)) break;
  }
  close(to_child[1]);  // the child sees end of input and exits
  close(from_child[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
