/* SPDX-License-Identifier: MIT */
/* pagecache: the command. Dispatches to a subcommand from one table; adding
 * a subcommand is one entry here and one cmd_<name>() in its own file. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "snapcli.h"

struct subcommand {
	const char *name;
	int (*run)(int argc, char **argv);  /* argv[0] is the subcommand's name */
	const char *summary;
};

static const struct subcommand subcommands[] = {
	{ "stat", cmd_stat, "show how much of each file sits in the page cache" },
	{ "dump", cmd_dump, "record which pages of which files are cached (a snapshot)" },
	{ "restore", cmd_restore, "bring the pages a snapshot recorded back into the cache" },
	{ "diff", cmd_diff, "compare two snapshots: pages added and removed per file" },
	{ "audit", cmd_audit, "what this kernel reveals about the page cache, and to whom" },
	{ "evict", cmd_evict, "drop files from the page cache" },
	{ "touch", cmd_touch, "bring files into the page cache" },
	{ "lock", cmd_lock, "keep files in the page cache until a signal" },
};

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: pagecache [--help | --version]\n"
		"       pagecache COMMAND [OPTIONS] [ARGS...]\n"
		"\n"
		"Which pages of which files sit in the Linux page cache, and how far\n"
		"the kernel's answer can be trusted.\n"
		"\n"
		"Commands:\n");
	for (size_t i = 0; i < sizeof(subcommands) / sizeof(subcommands[0]); i++)
		fprintf(f, "  %-10s %s\n", subcommands[i].name, subcommands[i].summary);
	fprintf(f,
		"\n"
		"'pagecache COMMAND --help' describes a command; 'man pagecache' all of them.\n");
}

int main(int argc, char **argv)
{
	const char *cmd = argc > 1 ? argv[1] : NULL;

	if (!cmd) {
		usage(stderr);
		return PC_EXIT_USAGE;
	}
	if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
		usage(stdout);
		return PC_EXIT_OK;
	}
	if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "-V") == 0) {
		printf("pagecache %s (libpagecache %s)\n", PC_CLI_VERSION, pc_version());
		return PC_EXIT_OK;
	}
	for (size_t i = 0; i < sizeof(subcommands) / sizeof(subcommands[0]); i++)
		if (strcmp(cmd, subcommands[i].name) == 0)
			return subcommands[i].run(argc - 1, argv + 1);
	fprintf(stderr, "%s: unknown command '%s'\n\n", pc_cli_name, cmd);
	usage(stderr);
	return PC_EXIT_USAGE;
}
