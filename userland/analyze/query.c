/*
 * Map-fold-filter over requests (query.h).  A filter's percentiles are
 * resolved once against the requests it starts from, then each request is
 * tested against plain numbers; the fold reads the passing requests in
 * place.  Percentiles are nearest-rank over a sorted copy: exact, so the
 * host and the OS builds give the same figures and tests can expect them.
 */
#include "query.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int compare_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

uint64_t query_percentile(const struct request_set *set, int field, unsigned per_mille)
{
	if (!set->count)
		return 0;
	uint64_t *values = malloc(set->count * sizeof *values);
	if (!values)
		return 0;
	for (size_t i = 0; i < set->count; i++)
		values[i] = request_value(set, &set->requests[i], field);
	qsort(values, set->count, sizeof *values, compare_u64);
	size_t rank = (size_t)(((uint64_t)per_mille * set->count + 999) / 1000);
	uint64_t value = values[rank ? rank - 1 : 0];
	free(values);
	return value;
}

/* "p99", "p99.9", "p50": per mille, or 0 when text is not a percentile. */
static unsigned parse_percentile(const char *text, const char **end)
{
	if (text[0] != 'p' || text[1] < '0' || text[1] > '9')
		return 0;
	char *rest;
	double percent = strtod(text + 1, &rest);
	if (percent <= 0 || percent > 100)
		return 0;
	*end = rest;
	return (unsigned)(percent * 10 + 0.5);
}

/* A number with an optional time unit, in ns.  Returns 0 or -1. */
static int parse_value(const char *text, uint64_t *value)
{
	char *rest;
	double number = strtod(text, &rest);
	static const struct {
		const char *unit;
		double scale;
	} units[] = {{"", 1}, {"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}};
	if (rest == text || !(number >= 0)) /* NaN is refused too */
		return -1;
	for (unsigned i = 0; i < sizeof units / sizeof units[0]; i++) {
		double ns = number * units[i].scale + 0.5;
		if (strcmp(rest, units[i].unit))
			continue;
		if (!(ns < 18446744073709551616.0)) /* 2^64: past it (or inf) no ns fits */
			return -1;
		*value = (uint64_t)ns;
		return 0;
	}
	return -1;
}

static const struct {
	const char *text;
	enum query_op op;
} operators[] = {{"<=", QUERY_LE}, {">=", QUERY_GE}, {"!=", QUERY_NE},
		 {"<", QUERY_LT},  {">", QUERY_GT},  {"=", QUERY_EQ}};

int query_parse_condition(const struct request_set *set, const char *text,
			  struct query_filter *filter)
{
	size_t name_length = strcspn(text, "<>=!");
	char name[REQUEST_NAME_MAX];
	if (filter->count == QUERY_CONDITIONS_MAX || !text[name_length] ||
	    name_length >= sizeof name)
		goto bad;
	memcpy(name, text, name_length);
	name[name_length] = 0;
	struct query_condition c = {.field = request_field_of(set, name)};
	if (c.field < 0) {
		fprintf(stderr, "analyze: no column '%s'\n", name);
		return -1;
	}
	const char *rest = text + name_length;
	unsigned i = 0;
	while (strncmp(rest, operators[i].text, strlen(operators[i].text)))
		if (++i == sizeof operators / sizeof operators[0])
			goto bad;
	c.op = operators[i].op;
	rest += strlen(operators[i].text);
	const char *after = NULL;
	c.percentile_per_mille = parse_percentile(rest, &after);
	if (c.percentile_per_mille ? *after != 0 : parse_value(rest, &c.value) < 0)
		goto bad;
	filter->where[filter->count++] = c;
	return 0;
bad:
	fprintf(stderr, "analyze: cannot read the condition '%s'\n", text);
	return -1;
}

static int passes(const struct request_set *set, const struct request *r,
		  const struct query_filter *f)
{
	if ((f->pid && r->pid != f->pid) || (f->matched_only && !r->matched) ||
	    r->start_ns < f->from_ns || (f->to_ns && r->start_ns >= f->to_ns))
		return 0;
	for (unsigned i = 0; i < f->count; i++) {
		uint64_t v = request_value(set, r, f->where[i].field), t = f->where[i].value;
		int ok;
		switch (f->where[i].op) {
		case QUERY_LT: ok = v < t; break;
		case QUERY_LE: ok = v <= t; break;
		case QUERY_GT: ok = v > t; break;
		case QUERY_GE: ok = v >= t; break;
		case QUERY_EQ: ok = v == t; break;
		default: ok = v != t; break;
		}
		if (!ok)
			return 0;
	}
	return 1;
}

/* filter with its percentiles turned into values over set. */
static struct query_filter resolved(const struct request_set *set, const struct query_filter *f)
{
	struct query_filter out = *f;
	for (unsigned i = 0; i < out.count; i++)
		if (out.where[i].percentile_per_mille)
			out.where[i].value = query_percentile(set, out.where[i].field,
							      out.where[i].percentile_per_mille);
	return out;
}

void query_apply(struct request_set *set, const struct query_filter *filter)
{
	struct query_filter f = resolved(set, filter);
	size_t kept = 0;
	for (size_t i = 0; i < set->count; i++) {
		if (passes(set, &set->requests[i], &f))
			set->requests[kept++] = set->requests[i];
		else
			free(set->requests[i].events);
	}
	set->count = kept;
}

int query_parse_fold(const struct request_set *set, const char *text, struct query_fold *fold)
{
	static const char *const names[] = {"sum", "mean", "min", "max", "count"};
	*fold = (struct query_fold){0};
	size_t op_length = strcspn(text, "(");
	const char *after = NULL;
	unsigned i = 0;
	while (i < 5 && (strlen(names[i]) != op_length || strncmp(text, names[i], op_length)))
		i++;
	fold->op = (enum query_fold_op)i;
	if (i == 5 && !((fold->percentile_per_mille = parse_percentile(text, &after)) &&
			after == text + op_length))
		goto bad;
	const char *field = text + op_length + (text[op_length] == '(');
	size_t field_length = strcspn(field, ")");
	char name[REQUEST_NAME_MAX];
	if (!text[op_length] || !field[field_length] || field_length >= sizeof name)
		goto bad;
	memcpy(name, field, field_length);
	name[field_length] = 0;
	if ((fold->field = request_field_of(set, name)) < 0) {
		fprintf(stderr, "analyze: no column '%s'\n", name);
		return -1;
	}
	char rest[256];
	snprintf(rest, sizeof rest, "%s", field + field_length + 1);
	char *word = strtok(rest, " ");
	if (word && strcmp(word, "where"))
		goto bad;
	while (word && (word = strtok(NULL, " ")))
		if (strcmp(word, "and") && query_parse_condition(set, word, &fold->where) < 0)
			return -1;
	return 0;
bad:
	fprintf(stderr,
		"analyze: cannot read the fold '%s' (sum|mean|min|max|count|pNN(COLUMN) "
		"[where CONDITION [and CONDITION]...])\n",
		text);
	return -1;
}

uint64_t query_fold(const struct request_set *set, const struct query_fold *fold)
{
	struct query_filter f = resolved(set, &fold->where);
	struct request_set passing = *set;
	passing.requests = malloc((set->count ? set->count : 1) * sizeof *passing.requests);
	if (!passing.requests)
		return 0;
	passing.count = 0;
	for (size_t i = 0; i < set->count; i++)
		if (passes(set, &set->requests[i], &f))
			passing.requests[passing.count++] = set->requests[i];
	uint64_t result = 0, sum = 0;
	for (size_t i = 0; i < passing.count; i++) {
		uint64_t v = request_value(set, &passing.requests[i], fold->field);
		sum += v;
		if (fold->op == FOLD_MIN)
			result = i == 0 || v < result ? v : result;
		else if (fold->op == FOLD_MAX)
			result = v > result ? v : result;
	}
	if (fold->op == FOLD_SUM)
		result = sum;
	else if (fold->op == FOLD_MEAN)
		result = passing.count ? sum / passing.count : 0;
	else if (fold->op == FOLD_COUNT)
		result = passing.count;
	else if (fold->op == FOLD_PERCENTILE)
		result = query_percentile(&passing, fold->field, fold->percentile_per_mille);
	free(passing.requests);
	return result;
}
