/*
 * Memory for advice lists: a fixed pool of JP_LIST_POOL lists on a free
 * chain.  A pool keeps weaving independent of the heap (mm's own functions are
 * join points) and makes "how many lists can this attach still get" a number
 * the writer checks before it changes anything.  Callers hold the writer lock.
 */
#include "joinpoint/internal.h"

#include <stddef.h>

#include "panic/panic.h"

static struct jp_list pool[JP_LIST_POOL];
static struct jp_list *free_chain;
static unsigned free_count;
static bool pool_ready;

static void pool_init(void)
{
	for (unsigned i = 0; i < JP_LIST_POOL; i++) {
		pool[i].retired_next = free_chain;
		free_chain = &pool[i];
	}
	free_count = JP_LIST_POOL;
	pool_ready = true;
}

struct jp_list *jp_list_alloc(void)
{
	if (!pool_ready)
		pool_init();
	struct jp_list *list = free_chain;
	if (!list)
		return NULL;
	free_chain = list->retired_next;
	free_count--;
	list->retired_next = NULL;
	list->count = 0;
	return list;
}

void jp_list_free(struct jp_list *list)
{
	ASSERT(list >= pool && list < pool + JP_LIST_POOL);
	list->retired_next = free_chain;
	free_chain = list;
	free_count++;
}

unsigned jp_list_available(void)
{
	return pool_ready ? free_count : JP_LIST_POOL;
}
