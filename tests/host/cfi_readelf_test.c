// host-test-sources: kernel/lib/cfi.c
/*
 * Does the CFI interpreter read real tables as binutils does?  For each
 * program (the userland's unwind and httpd when built; and two made here
 * with the host's gcc: a static one whose frame GCC realigns, with its CFA
 * and rbp by DWARF expression, and a dynamically linked one, whose .plt has
 * GNU ld's CFA expression), every row `readelf --debug-dump=frames-interp`
 * prints is looked up through the program's .eh_frame_hdr at its first
 * address, and the rule found must say what readelf's row says: the CFA
 * (register and offset, or "exp"), rbp and the return address ("c-N",
 * "exp", "vexp", "u").  The rows by expression must be there, so a table
 * whose expressions were lost or skipped fails.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hosttest.h"
#include "lib/cfi.h"
#include "lib/errno.h"

struct image {
	uint8_t *bytes;
	size_t length;
	struct section {
		uint64_t address, offset, size;
	} hdr, eh_frame;
};

/* Reads from the two sections the walk may read, by address. */
static int read_image(void *to, uint64_t address, size_t length, void *arg)
{
	const struct image *image = arg;
	const struct section *sections[] = {&image->hdr, &image->eh_frame};
	for (int i = 0; i < 2; i++) {
		const struct section *s = sections[i];
		if (address >= s->address && address - s->address <= s->size &&
		    length <= s->size - (address - s->address)) {
			memcpy(to, image->bytes + s->offset + (address - s->address), length);
			return 0;
		}
	}
	return -EFAULT;
}

static uint64_t field(const uint8_t *p, int size)
{
	uint64_t value = 0;
	memcpy(&value, p, (size_t)size);
	return value;
}

/* The file's bytes and its two sections, found by name; 0 or -1. */
static int load(const char *path, struct image *image)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return -1;
	memset(image, 0, sizeof *image);
	image->bytes = malloc(64 << 20);
	image->length = fread(image->bytes, 1, 64 << 20, f);
	fclose(f);
	const uint8_t *e = image->bytes;
	if (image->length < 64 || memcmp(e, "\177ELF", 4))
		return -1;
	uint64_t shoff = field(e + 40, 8), shnum = field(e + 60, 2), shstrndx = field(e + 62, 2);
	if (shoff + shnum * 64 > image->length || shstrndx >= shnum)
		return -1;
	const uint8_t *names = e + field(e + shoff + shstrndx * 64 + 24, 8);
	for (uint64_t i = 0; i < shnum; i++) {
		const uint8_t *sh = e + shoff + i * 64;
		struct section s = {field(sh + 16, 8), field(sh + 24, 8), field(sh + 32, 8)};
		const char *name = (const char *)names + field(sh, 4);
		if (!strcmp(name, ".eh_frame_hdr"))
			image->hdr = s;
		else if (!strcmp(name, ".eh_frame"))
			image->eh_frame = s;
	}
	return image->hdr.size && image->eh_frame.size ? 0 : -1;
}

struct tally {
	int rows, agree, by_expression;
};

/* Does the rule say what readelf's CFA cell says? */
static int cfa_agrees(const struct cfi_rule *r, const char *cell)
{
	static const char *const names[] = {"rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp",
					    "r8",  "r9",  "r10", "r11", "r12", "r13", "r14", "r15"};
	if (!strcmp(cell, "exp"))
		return r->cfa_known == CFI_CFA_EXPRESSION;
	const char *plus = strchr(cell, '+');
	if (!plus || r->cfa_known != CFI_CFA_REGISTER || r->cfa_register >= 16)
		return 0;
	return (size_t)(plus - cell) == strlen(names[r->cfa_register]) &&
	       !strncmp(cell, names[r->cfa_register], (size_t)(plus - cell)) &&
	       r->cfa_offset == strtoll(plus + 1, NULL, 10);
}

/* Does the register rule say what readelf's cell says ("u" is readelf's
 * word for a register no instruction has set yet: same value, for rbp)? */
static int register_agrees(const struct cfi_register_rule *r, const char *cell, int is_rbp)
{
	if (!strcmp(cell, "u"))
		return r->how == CFI_UNDEFINED || (is_rbp && r->how == CFI_SAME);
	if (!strcmp(cell, "s"))
		return r->how == CFI_SAME;
	if (!strcmp(cell, "exp"))
		return r->how == CFI_AT_EXPR;
	if (!strcmp(cell, "vexp"))
		return r->how == CFI_IS_EXPR;
	if (cell[0] == 'c')
		return r->how == CFI_AT_CFA && r->offset == strtoll(cell + 1, NULL, 10);
	if (cell[0] == 'v')
		return r->how == CFI_IS_CFA && r->offset == strtoll(cell + 1, NULL, 10);
	return r->how == CFI_UNKNOWN; /* in another register */
}

/* One row of readelf's table: LOC, then the cells of columns[]. */
static void check_row(const struct image *image, const struct cfi_tables *t, char *line,
		      char columns[][8], int column_count, struct tally *tally)
{
	char *cells[24];
	int count = 0;
	for (char *word = strtok(line, " \n"); word && count < 24; word = strtok(NULL, " \n"))
		cells[count++] = word;
	if (count != column_count + 1 || strlen(cells[0]) != 16)
		return; /* not a row: "000000a0 ZERO terminator" */
	uint64_t pc = strtoull(cells[0], NULL, 16);
	struct cfi_rule rule;
	if (cfi_find_rule(t, pc, read_image, (void *)image, &rule)) {
		printf("# %#llx: no rule found\n", (unsigned long long)pc);
		tally->rows++;
		return;
	}
	int agrees = 1;
	for (int c = 0; c < column_count; c++) {
		const char *cell = cells[c + 1];
		if (!strcmp(columns[c], "CFA"))
			agrees &= cfa_agrees(&rule, cell);
		else if (!strcmp(columns[c], "rbp"))
			agrees &= register_agrees(&rule.rbp, cell, 1);
		else if (!strcmp(columns[c], "ra"))
			agrees &= register_agrees(&rule.return_address, cell, 0);
		tally->by_expression += !strcmp(cell, "exp") &&
					(!strcmp(columns[c], "CFA") || !strcmp(columns[c], "rbp"));
	}
	if (!agrees)
		printf("# %#llx: the interpreter disagrees with readelf's row\n",
		       (unsigned long long)pc);
	tally->rows++;
	tally->agree += agrees;
}

/* Every row of path's tables; the tally. */
static struct tally check_program(const char *path)
{
	struct tally tally = {0};
	struct image image;
	struct cfi_tables t;
	if (load(path, &image) ||
	    cfi_parse_hdr(image.bytes + image.hdr.offset, image.hdr.size, image.hdr.address, &t)) {
		printf("# %s: no unwind tables read\n", path);
		return tally;
	}
	t.eh_frame_end = image.eh_frame.address + image.eh_frame.size;
	char command[512], line[512], columns[24][8];
	int column_count = 0;
	snprintf(command, sizeof command, "readelf --debug-dump=frames-interp '%s'", path);
	FILE *readelf = popen(command, "r");
	while (readelf && fgets(line, sizeof line, readelf)) {
		if (strstr(line, " CIE ")) {
			column_count = -1; /* the CIE's own table: not an FDE's */
		} else if (strstr(line, " FDE ")) {
			column_count = 0;
		} else if (!strncmp(line, "   LOC", 6) && column_count == 0) {
			for (char *word = strtok(line + 6, " \n"); word && column_count < 24;
			     word = strtok(NULL, " \n"))
				snprintf(columns[column_count++], sizeof columns[0], "%s", word);
		} else if (column_count > 0 && line[0] >= '0' && line[0] <= 'f') {
			check_row(&image, &t, line, columns, column_count, &tally);
		}
	}
	if (readelf)
		pclose(readelf);
	free(image.bytes);
	printf("# %s: %d rows, %d agree, %d by expression\n", path, tally.rows, tally.agree,
	       tally.by_expression);
	return tally;
}

/* A program made from source by the host's gcc with flags: its path, or
 * NULL. */
static const char *make_program(const char *name, const char *source, const char *flags)
{
	static char path[3][256];
	static int next;
	char *out = path[next++ % 3], command[1024];
	snprintf(out, sizeof path[0], "%s/%s.%d", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
		 name, (int)getpid());
	snprintf(command, sizeof command, "printf '%%s' '%s' | gcc -x c - %s -o '%s'", source,
		 flags, out);
	int made = system(command);
	CHECK_EQ(made, 0);
	return made ? NULL : out;
}

static void realigned_frame_agrees(void)
{
	const char *path = make_program(
	    "cfi-realigned",
	    "#include <alloca.h>\n"
	    "__attribute__((noinline)) void use(char *p) { __asm__ volatile(\"\" : : \"r\"(p) : "
	    "\"memory\"); }\n"
	    "__attribute__((noinline)) int f(int n) { char *p = alloca(n); char buf[64] "
	    "__attribute__((aligned(64))); use(buf); use(p); return n + buf[1]; }\n"
	    "void _start(void) { f(3); for (;;) ; }\n",
	    "-O2 -static -nostdlib -fasynchronous-unwind-tables -Wl,--eh-frame-hdr");
	REQUIRE(path);
	struct tally tally = check_program(path);
	unlink(path);
	CHECK(tally.rows > 4);
	CHECK_EQ(tally.agree, tally.rows);
	CHECK(tally.by_expression >= 2); /* the CFA and rbp */
}

static void plt_agrees(void)
{
	const char *path = make_program(
	    "cfi-plt", "#include <stdio.h>\nint main(void) { return puts(\"x\") < 0; }\n",
	    "-O2 -Wl,--eh-frame-hdr");
	REQUIRE(path);
	struct tally tally = check_program(path);
	unlink(path);
	CHECK(tally.rows > 2);
	CHECK_EQ(tally.agree, tally.rows);
	CHECK(tally.by_expression >= 1); /* the .plt's CFA */
}

/* The userland's programs, when they are built (the host group may run
 * before make). */
static void userland_programs_agree(void)
{
	const char *programs[] = {"build/user/bin/unwind", "build/user/bin/httpd"};
	for (int i = 0; i < 2; i++) {
		if (access(programs[i], R_OK))
			continue;
		struct tally tally = check_program(programs[i]);
		CHECK(tally.rows > 10);
		CHECK_EQ(tally.agree, tally.rows);
	}
}

HOSTTEST_MAIN(HOSTTEST_CASE(realigned_frame_agrees), HOSTTEST_CASE(plt_agrees),
	      HOSTTEST_CASE(userland_programs_agree))
