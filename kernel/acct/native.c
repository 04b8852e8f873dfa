/*
 * The accounting's native advice: what the rscfl aspect weaves on every join
 * point ("*") when it is linked (kernel/acct/weave.c; the linker's
 * linker_set_native_advice).  It is kernel code the join point calls itself:
 * no guard, no aspect ABI, no name looked at on the way.
 *
 * Why: as aspect code behind the guard and the ABI an event cost about 560
 * instructions (docs/PERFORMANCE.md), most of it the guard's record and
 * recovery point, the aspect's name-keyed kind lookup twice and five ABI
 * calls.  Here a join point's meaning is a class fixed the first time the
 * accounting is woven: its kind (a call, a system call, a switch, an
 * interrupt, a fault, an allocation or a free) and its module's id, which
 * each result maps to its subsystem slot through a table (charge.c).  A
 * thread that is not accounted costs the class load and a load and a test of
 * its state; an accounted one a TSC read and a frame pushed, and at the close
 * another TSC read and a few adds to its pending counts (charge.c).
 *
 * While it is alone on a join point the advice runs whole calls instead of a
 * before and an after: the trampoline jumps to its fast path code on a
 * _NOSLEEP join point, the dispatcher calls its around on one that may sleep
 * and its nested_call on one reached inside a _NOSLEEP call (charge.c:
 * acct_fast_call, acct_around), with no context built.
 *
 * The classes: one byte pair per join point of the registry, by its index
 * (a pointer difference); module ids by name, the same string compared once
 * per join point when the table is built.  Past ACCT_MAX_MODULES names the
 * last id is "other".
 */
#include "acct/internal.h"
#include "console/console.h"
#include "cpu/percpu.h"
#include "lib/errno.h"
#include "lib/string.h"
#include "linker/weave/weave.h"
#include "mm/mm.h"
#include "sched/sched.h"

const char *acct_module_names[ACCT_MAX_MODULES];
char acct_module_labels[ACCT_MAX_MODULES][ACCT_NAME_MAX];
uint8_t acct_mm_module = ACCT_MAX_MODULES - 1;

struct acct_class *acct_classes; /* by join point index, set once */
const struct joinpoint *acct_switch_joinpoint;
uint32_t acct_switch_index = UINT32_MAX;
const struct joinpoint *acct_first_joinpoint;
unsigned acct_class_count;
static unsigned module_count;

/* Join point events the native advice saw, every thread's, per CPU (the
 * aspect's statistics: `aspect stats rscfl`). */
uint64_t acct_native_events[MAX_CPUS];

static bool starts_with(const char *text, const char *prefix)
{
	return strncmp(text, prefix, strlen(prefix)) == 0;
}

static enum acct_kind kind_of_name(const char *name)
{
	static const struct {
		const char *name;
		enum acct_kind kind;
	} named[] = {
	    {"sched.switch", ACCT_KIND_SWITCH},
	    {"irq.entry", ACCT_KIND_IRQ},
	    {"trap.entry", ACCT_KIND_TRAP},
	    {"mm.kmalloc", ACCT_KIND_KMALLOC},
	    {"mm.alloc_frame", ACCT_KIND_FRAME},
	    {"mm.kfree", ACCT_KIND_KFREE},
	    {"mm.free_frame", ACCT_KIND_FREE_FRAME},
	    {"sys.ms_acct", ACCT_KIND_CONTROL},
	    {"sys.ms_acct_switch_token", ACCT_KIND_CONTROL},
	};
	for (unsigned i = 0; i < sizeof named / sizeof named[0]; i++)
		if (strcmp(name, named[i].name) == 0)
			return named[i].kind;
	return starts_with(name, "sys.") ? ACCT_KIND_SYSCALL : ACCT_KIND_CALL;
}

static uint8_t module_id(const char *module)
{
	for (unsigned i = 0; i < module_count; i++)
		if (strcmp(acct_module_names[i], module) == 0)
			return (uint8_t)i;
	if (module_count == ACCT_MAX_MODULES - 1) {
		acct_module_names[module_count++] = "other";
		return ACCT_MAX_MODULES - 1;
	}
	if (module_count == ACCT_MAX_MODULES)
		return ACCT_MAX_MODULES - 1;
	acct_module_names[module_count] = module;
	return (uint8_t)module_count++;
}

int acct_classes_prepare(void)
{
	if (__atomic_load_n(&acct_classes, __ATOMIC_ACQUIRE))
		return 0;
	unsigned count = jp_count();
	struct acct_class *table = kzalloc((count ? count : 1) * sizeof *table);
	if (!table)
		return -ENOMEM;
	for (unsigned i = 0; i < count; i++) {
		const struct joinpoint *jp = jp_at(i);
		table[i].kind = (uint8_t)kind_of_name(jp->name);
		table[i].module = module_id(jp->module);
	}
	acct_mm_module = module_id("mm");
	/* The last id is "other" whether or not the names ran out: a join point
	 * the table does not know is charged there (acct_class_of). */
	acct_module_names[ACCT_MAX_MODULES - 1] = "other";
	for (unsigned i = 0; i < ACCT_MAX_MODULES; i++)
		if (acct_module_names[i])
			strlcpy(acct_module_labels[i], acct_module_names[i], ACCT_NAME_MAX);
	const struct joinpoint *switch_jp = jp_find("sched.switch");
	if (switch_jp && switch_jp->argc == 2) {
		acct_switch_joinpoint = switch_jp;
		acct_switch_index = jp_index(switch_jp);
	}
	acct_first_joinpoint = jp_at(0);
	__atomic_store_n(&acct_classes, table, __ATOMIC_RELEASE);
	__atomic_store_n(&acct_class_count, count, __ATOMIC_RELEASE);
	return 0;
}

/* ---- The advice (charge.c) and its registration ---------------------------- */

static uint64_t native_events(void)
{
	uint64_t sum = 0;
	for (unsigned i = 0; i < MAX_CPUS; i++)
		sum += __atomic_load_n(&acct_native_events[i], __ATOMIC_RELAXED);
	return sum;
}

/*
 * The fast path code of _NOSLEEP join points (jp_advice.fast_path,
 * joinpoint.h): the trampoline jumps here inside its section with the list
 * in %rbx and the argument slots at %rsp (16-byte aligned); acct_fast_call
 * (charge.c) runs the call and its accounting, and the result goes back
 * through jp_fast_path_leave0/1.
 */
extern const char acct_fast_path0[], acct_fast_path1[];
// clang-format off
__attribute__((used)) static void fast_path_code(void)
{
	__asm__ volatile(
	".pushsection .text.jp_trampoline, \"ax\"\n"
	".macro ACCT_FAST arguments\n"
	"	.globl acct_fast_path\\arguments\n"
	"	.type acct_fast_path\\arguments, @function\n"
	"acct_fast_path\\arguments:\n"
	"	mov %rbx, %rdi\n"
	"	mov %rsp, %rsi\n"
	"	call acct_fast_call\n"
	"	jmp jp_fast_path_leave\\arguments\n"
	"	.size acct_fast_path\\arguments, . - acct_fast_path\\arguments\n"
	".endm\n"
	"	ACCT_FAST 0\n"
	"	ACCT_FAST 1\n"
	".purgem ACCT_FAST\n"
	"	.popsection\n");
}
// clang-format on

/* Only an owner's calls are charged: the running thread's state in struct
 * cpu (acct) is nonzero exactly while an owner runs, so other threads' calls
 * skip the join point's dispatching path altogether (joinpoint.h, "Advice
 * for some threads").  Not sched.switch: switching in an owner from another
 * thread is charged too (its time off the CPU), while the CPU's word is still
 * the other thread's. */
static uint32_t owners_only(const struct joinpoint *jp)
{
	return jp_index(jp) == acct_switch_index ? 0 : (uint32_t)offsetof(struct cpu, acct);
}

static const struct jp_advice native_advice = {
    .name = "rscfl",
    .before = acct_native_before,
    .after = acct_native_after,
    .priority = 100,
    .flags = JP_ADVICE_NATIVE,
    .fast_path = {acct_fast_path0, acct_fast_path1},
    .around = acct_around,
    .nested_call = acct_fast_call,
    .thread_scope = owners_only,
};

static const struct linker_native_advice native = {
    .aspect = "rscfl",
    .pattern = "*",
    .advice = &native_advice,
    .events = native_events,
};

int acct_native_register(void)
{
	int err = acct_classes_prepare();
	return err ? err : linker_set_native_advice(&native);
}

void acct_boot_init(void)
{
	int err = acct_native_register();
	if (err)
		pr_warn("acct: native advice not registered (%d)\n", err);
}
