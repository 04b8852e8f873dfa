/*
 * Where the linker put the join-point descriptors and their patch sites
 * (kernel.ld: __joinpoints_start/end, __jump_table_start/end).  Kept apart so
 * host tests can hand the same code their own arrays.
 */
#include "joinpoint/internal.h"

extern const struct joinpoint __joinpoints_start[], __joinpoints_end[];
extern const struct jp_site __jump_table_start[], __jump_table_end[];

void jp_section_bounds(const struct joinpoint **first, const struct joinpoint **last)
{
	*first = __joinpoints_start;
	*last = __joinpoints_end;
}

void jp_site_bounds(const struct jp_site **first, const struct jp_site **last)
{
	*first = __jump_table_start;
	*last = __jump_table_end;
}
