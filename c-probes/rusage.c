/* rusage: run a command and write its peak resident set, without the caller's.
 *
 *   rusage FILE CMD [ARG...]
 *
 * Linux keeps a process's peak RSS across exec (the old address space's high-water mark goes into
 * signal->maxrss), so a command forked by a large process (the sweep engine's Python, ~20 MiB) reads
 * at least that much in wait4(2). This small process forks again: the command's floor is then this
 * program's own few hundred KiB. After the command ends, FILE gets one line, `maxrss_kib N`, the
 * ru_maxrss of the command and the descendants it waited for (the largest single process), and this
 * process ends as the command did: its exit code, or the same signal (without a core file).
 * Exit 127 when CMD cannot be run, 2 for bad usage, as a shell would. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: rusage FILE CMD [ARG...]\n");
		return 2;
	}
	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, "rusage: fork: %s\n", strerror(errno));
		return 127;
	}
	if (pid == 0) {
		execvp(argv[2], argv + 2);
		fprintf(stderr, "rusage: %s: %s\n", argv[2], strerror(errno));
		_exit(127);
	}
	/* The caller stops a measurement by signalling the whole process group: the command gets it too,
	 * and this process must still outlive it to report, so it ignores the usual stop signals. */
	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	int status;
	struct rusage ru;
	while (wait4(pid, &status, 0, &ru) < 0) {
		if (errno != EINTR) {
			fprintf(stderr, "rusage: wait4: %s\n", strerror(errno));
			return 127;
		}
	}
	FILE *f = fopen(argv[1], "w");
	if (!f || fprintf(f, "maxrss_kib %ld\n", ru.ru_maxrss) < 0 || fclose(f) != 0)
		fprintf(stderr, "rusage: %s: %s\n", argv[1], strerror(errno));
	if (WIFSIGNALED(status)) {
		int sig = WTERMSIG(status);
		struct rlimit none = {0, 0};
		setrlimit(RLIMIT_CORE, &none);
		signal(sig, SIG_DFL);
		sigset_t set;
		sigemptyset(&set);
		sigaddset(&set, sig);
		sigprocmask(SIG_UNBLOCK, &set, NULL);
		raise(sig);
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : 127;
}
