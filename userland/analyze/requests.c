/*
 * The request set (requests.h): a growing array of requests and the names of
 * the subsystems whose time they carry.  Columns are looked up by name once
 * and read by number, so queries and reports never name a field in code.
 */
#include "requests.h"

#include <stdlib.h>
#include <string.h>

static const char *const own_fields[] = {
    [REQUEST_FIELD_ID] = "id",         [REQUEST_FIELD_PID] = "pid",
    [REQUEST_FIELD_START] = "start",   [REQUEST_FIELD_LATENCY] = "latency",
    [REQUEST_FIELD_BYTES] = "bytes",   [REQUEST_FIELD_STATUS] = "status",
    [REQUEST_FIELD_KERNEL] = "kernel",
};

unsigned request_subsystem(struct request_set *set, const char *name)
{
	for (unsigned i = 0; i < set->subsystem_count; i++)
		if (!strncmp(set->subsystems[i], name, REQUEST_NAME_MAX - 1))
			return i;
	if (set->subsystem_count == REQUEST_SUBSYSTEMS - 1) {
		strcpy(set->subsystems[REQUEST_SUBSYSTEMS - 1], "other");
		set->subsystem_count = REQUEST_SUBSYSTEMS;
	}
	if (set->subsystem_count == REQUEST_SUBSYSTEMS)
		return REQUEST_SUBSYSTEMS - 1;
	strncpy(set->subsystems[set->subsystem_count], name, REQUEST_NAME_MAX - 1);
	return set->subsystem_count++;
}

struct request *request_add(struct request_set *set)
{
	if (set->count == set->capacity) {
		size_t capacity = set->capacity ? set->capacity * 2 : 256;
		struct request *grown = realloc(set->requests, capacity * sizeof *grown);
		if (!grown)
			return NULL;
		set->requests = grown;
		set->capacity = capacity;
	}
	struct request *r = &set->requests[set->count++];
	memset(r, 0, sizeof *r);
	return r;
}

int request_field_of(const struct request_set *set, const char *name)
{
	for (unsigned i = 0; i < REQUEST_FIELD_SUBSYSTEM; i++)
		if (!strcmp(own_fields[i], name))
			return (int)i;
	for (unsigned i = 0; i < set->subsystem_count; i++)
		if (!strcmp(set->subsystems[i], name))
			return REQUEST_FIELD_SUBSYSTEM + (int)i;
	return -1;
}

const char *request_field_name(const struct request_set *set, int field)
{
	if (field >= 0 && field < REQUEST_FIELD_SUBSYSTEM)
		return own_fields[field];
	return set->subsystems[field - REQUEST_FIELD_SUBSYSTEM];
}

int request_field_is_time(int field)
{
	return field == REQUEST_FIELD_LATENCY || field == REQUEST_FIELD_START ||
	       field >= REQUEST_FIELD_KERNEL;
}

uint64_t request_value(const struct request_set *set, const struct request *r, int field)
{
	switch (field) {
	case REQUEST_FIELD_ID: return r->id;
	case REQUEST_FIELD_PID: return (uint64_t)r->pid;
	case REQUEST_FIELD_START: return r->start_ns;
	case REQUEST_FIELD_LATENCY: return r->latency_ns;
	case REQUEST_FIELD_BYTES: return r->bytes;
	case REQUEST_FIELD_STATUS: return (uint64_t)r->status;
	case REQUEST_FIELD_KERNEL: {
		uint64_t sum = 0;
		for (unsigned i = 0; i < set->subsystem_count; i++)
			sum += r->subsystem_ns[i];
		return sum;
	}
	default: return r->subsystem_ns[field - REQUEST_FIELD_SUBSYSTEM];
	}
}

void request_set_free(struct request_set *set)
{
	for (size_t i = 0; i < set->count; i++)
		free(set->requests[i].events);
	free(set->requests);
	set->requests = NULL;
	set->count = set->capacity = 0;
}
