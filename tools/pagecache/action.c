/* SPDX-License-Identifier: MIT */
/* What evict, touch and lock share: their option parsing, the walk's note
 * and error callbacks, the frame of their JSON documents, the walk itself,
 * a file's resident count, --max-size, the exit status. */
#include <errno.h>
#include <getopt.h>
#include <linux/capability.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cli.h"

bool action_options(struct action *a, struct selection *sel, const struct action_cli *cli,
		    void *ctx, int argc, char **argv, int *status)
{
	int opt, ret;

	optind = 1;
	opterr = 0; /* our own messages, with the subcommand's name */
	while ((opt = getopt_long(argc, argv, ":hqv" SELECTION_SHORT_OPTIONS, cli->options,
				  NULL)) != -1) {
		if (opt == 'h') {
			printf("%s%s%s", cli->usage_head, selection_help, cli->usage_tail);
			*status = PC_EXIT_OK;
			return false;
		}
		if (opt == 'q' || opt == 'v') {
			*(opt == 'q' ? &a->quiet : &a->verbose) = true;
			continue;
		}
		ret = selection_option(sel, a->cmd, opt, optarg);
		if (ret == 0 && cli->option)
			ret = cli->option(ctx, opt, optarg);
		if (ret == 0)
			ret = usage_getopt_error(a->cmd, opt, argv);
		if (ret == -ENOMEM) {
			cli_error(NULL, 0, "out of memory");
			*status = PC_EXIT_FAILED;
			return false;
		}
		if (ret > 1) {
			*status = ret;
			return false;
		}
	}
	*status = selection_check(sel, a->cmd, argc - optind);
	return *status == 0;
}

void action_note(void *ctx, const char *path, size_t len, const char *why)
{
	struct action *a = ctx;

	a->skipped++;
	report_note(&a->rep, path, len, why);
	if (a->quiet)
		return;
	progress_clear(&a->progress);
	cli_error(path, len, "%s", why);
}

void action_error(void *ctx, const char *path, size_t len, int err, const char *msg)
{
	struct action *a = ctx;

	a->errors++;
	report_error(&a->rep, path, len, err, msg);
	progress_clear(&a->progress);
	cli_error(path, len, "%s", msg ? msg : strerror(-err));
}

int action_resident(int fd, uint64_t offset, uint64_t len, uint64_t *resident,
		    uint64_t *npages)
{
	struct pc_residency *r;
	int ret = pc_residency(fd, offset, len, PC_RES_COUNT_ONLY, &r);

	if (ret < 0)
		return ret;
	*npages = pc_residency_npages(r);
	ret = pc_residency_quality(r) == PC_QUALITY_EXACT;
	*resident = ret ? pc_residency_resident(r) : 0;
	pc_residency_free(r);
	return ret;
}

bool action_too_big(struct action *a, uint64_t size)
{
	if (size <= a->max_size)
		return false;
	a->filtered++;
	return true;
}

void action_json_begin(struct action *a)
{
	struct json *j = &a->rep.json;

	json_init(j, stdout, true);
	json_begin_object(j, NULL);
	json_uint(j, "format_version", 1);
	json_cstring(j, "command", a->cmd);
	json_begin_object(j, "kernel");
	report_json_kernel(&a->rep);
	json_end_object(j);
	json_begin_array(j, "files");
}

void action_json_totals(struct action *a)
{
	struct json *j = &a->rep.json;

	json_end_array(j);
	report_write_held(&a->rep);
	json_begin_object(j, "totals");
	json_uint(j, "files", a->files);
	json_uint(j, "errors", a->errors);
	json_uint(j, "skipped", a->skipped);
	json_uint(j, "filtered", a->filtered);
}

void action_json_end(struct action *a)
{
	struct json *j = &a->rep.json;

	json_end_object(j); /* totals */
	json_end_object(j);
	fputc('\n', stdout);
}

int action_walk(struct action *a, struct selection *sel, const struct walk_ops *ops,
		void *ctx, const char *header, int npaths, char **paths)
{
	struct walk *w = NULL;
	int ret;

	a->max_size = sel->max_size;
	a->rep.mode = a->json ? OUT_JSON : OUT_TEXT;
	a->rep.page_size = (uint64_t)pc_page_size();
	progress_init(&a->progress, !a->quiet && isatty(STDERR_FILENO));
	ret = walk_new(&sel->wo, ops, ctx, &w);
	if (ret < 0)
		return ret;
	if (a->json)
		action_json_begin(a);
	else if (a->verbose)
		fputs(header, stdout);
	ret = selection_walk(sel, w, npaths, paths);
	progress_clear(&a->progress);
	walk_free(w);
	return ret < 0 ? ret : 0;
}

int action_status(struct action *a)
{
	progress_clear(&a->progress);
	return stdout_status(a->errors ? PC_EXIT_FAILED : PC_EXIT_OK);
}

bool cap_effective(int cap)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2];

	memset(data, 0, sizeof(data));
	if (cap < 0 || cap >= 64 || syscall(SYS_capget, &hdr, data) < 0)
		return false;
	return (data[cap / 32].effective >> (cap % 32)) & 1;
}
