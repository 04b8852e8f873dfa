/*
 * Walking the command tree: lists, && and ||, pipelines (expanded here,
 * run by sh.c), if, while, until and for.  `break [n]` and `continue [n]`
 * set a request that every list on the way out honours, each loop taking
 * one level off it.  An interactive shell stops the whole command when ^C
 * ended a foreground job (or a command substitution), as bash does: a loop
 * whose body is interrupted ends, and nothing after it in the command
 * runs.  $? is the last command's status; a compound command that ran no
 * command (an if with no branch taken, a loop that never ran its body)
 * gives 0.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sh.h"

enum loop_request {
	LOOP_GO_ON,
	LOOP_BREAK,
	LOOP_CONTINUE,
};

static enum loop_request request;
static int request_levels; /* how many loops the request still crosses */
static int loop_depth;     /* loops being run around the current command */
static int interrupted;

int run_must_stop(void)
{
	return interrupted || request != LOOP_GO_ON;
}

void run_reset(void)
{
	interrupted = 0;
	request = LOOP_GO_ON;
}

int run_was_interrupted(void)
{
	return interrupted;
}

void run_interrupted(void)
{
	interrupted = 1;
}

/* The source text of tokens [from, to), for job listings. */
static void describe(int from, int to, char *text, size_t size)
{
	const struct token *tokens = parse_tokens();
	text[0] = '\0';
	for (int i = from; i < to; i++) {
		size_t used = strlen(text);
		const char *word = tokens[i].kind == T_NEWLINE ? ";" : tokens[i].word;
		snprintf(text + used, size - used, "%s%s", i > from ? " " : "", word);
	}
}

static void run_pipeline_node(const struct node *n, int background)
{
	struct pipeline pl;
	char text[80];
	int failed = 0;
	pl.count = 0;
	for (int i = 0; i < n->count && !failed; i++) {
		failed = expand_command(n->stages[i], &pl.stages[i]) < 0;
		pl.count = i + 1;
	}
	if (failed) {
		last_status = run_must_stop() ? 130 : 2;
	} else {
		describe(n->text_first, n->text_end, text, sizeof text);
		run_pipeline(&pl, background, text);
	}
	for (int i = 0; i < pl.count; i++)
		free_command(&pl.stages[i]);
}

static void run_list(const struct node *list)
{
	for (; list && !run_must_stop(); list = list->next) {
		if (list->item->kind == N_PIPELINE)
			run_pipeline_node(list->item, list->background);
		else
			run_node(list->item);
	}
}

/* After a loop's body: whether the loop goes on (a break or continue for
 * an outer loop leaves the request standing). */
static int loop_goes_on(void)
{
	if (request == LOOP_GO_ON)
		return !interrupted;
	if (--request_levels > 0)
		return 0;
	enum loop_request done = request;
	request = LOOP_GO_ON;
	return done == LOOP_CONTINUE;
}

/* while/until: the condition's status decides, the body's is kept. */
static void run_while(const struct node *n)
{
	int status = 0;
	loop_depth++;
	for (;;) {
		run_list(n->condition);
		if (run_must_stop()) {
			if (loop_goes_on())
				continue;
			break;
		}
		if ((last_status == 0) != (n->kind == N_WHILE))
			break;
		run_list(n->body);
		status = last_status;
		if (!loop_goes_on())
			break;
	}
	loop_depth--;
	last_status = run_must_stop() ? last_status : status;
}

static void run_for(const struct node *n)
{
	int count = 0, status = 0;
	char **words = expand_for_words(n, &count);
	const char *name = parse_tokens()[n->name].word;
	if (!words) {
		last_status = 2;
		return;
	}
	loop_depth++;
	for (int i = 0; i < count; i++) {
		setenv(name, words[i], 1);
		run_list(n->body);
		status = last_status;
		if (!loop_goes_on())
			break;
	}
	loop_depth--;
	free_words(words, count);
	last_status = run_must_stop() ? last_status : status;
}

static void run_if(const struct node *n)
{
	run_list(n->condition);
	if (run_must_stop())
		return;
	if (last_status == 0)
		run_list(n->body);
	else if (n->otherwise)
		run_node(n->otherwise);
	else
		last_status = 0;
}

int run_node(const struct node *n)
{
	if (!n)
		return last_status;
	switch (n->kind) {
	case N_LIST: run_list(n); break;
	case N_PIPELINE: run_pipeline_node(n, 0); break;
	case N_AND:
	case N_OR:
		run_node(n->left);
		if (!run_must_stop() && (last_status == 0) == (n->kind == N_AND))
			run_node(n->right);
		break;
	case N_IF: run_if(n); break;
	case N_WHILE:
	case N_UNTIL: run_while(n); break;
	case N_FOR: run_for(n); break;
	case N_SIMPLE: break; /* always a pipeline's stage */
	}
	return last_status;
}

/* break [n] / continue [n]: leaves (or goes on with) the n-th loop around. */
static int request_loop(enum loop_request kind, int argc, char **argv)
{
	const char *who = kind == LOOP_BREAK ? "break" : "continue";
	int levels = argc > 1 ? atoi(argv[1]) : 1;
	if (levels < 1) {
		fprintf(stderr, "%s: %s: not a loop count\n", who, argv[1]);
		return 1;
	}
	if (loop_depth == 0) {
		fprintf(stderr, "%s: only meaningful in a loop\n", who);
		return 1;
	}
	request = kind;
	request_levels = levels < loop_depth ? levels : loop_depth;
	return 0;
}

int builtin_break(int argc, char **argv)
{
	return request_loop(LOOP_BREAK, argc, argv);
}

int builtin_continue(int argc, char **argv)
{
	return request_loop(LOOP_CONTINUE, argc, argv);
}
