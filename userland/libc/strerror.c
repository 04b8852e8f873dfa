/*
 * Messages for the errnos errno_from_linux (convert.c) can give that newlib's
 * strerror has none for: it asks _user_strerror about a number it does not
 * know, and newlib's own answers NULL, so perror would print an empty
 * message.  Every program links this one first (-u _user_strerror in
 * userland/userland.mk): pulled after newlib's, the two would clash.
 */
#define __LINUX_ERRNO_EXTENSIONS__ /* names every errno newlib has */
#include <errno.h>
#include <stddef.h>

/* newlib's values, each with glibc's words. */
static const struct {
	int newlib_value;
	const char *message;
} errno_messages[] = {
    {ENOTBLK, "Block device required"},
    {ECHRNG, "Channel number out of range"},
    {EL2NSYNC, "Level 2 not synchronized"},
    {EL3HLT, "Level 3 halted"},
    {EL3RST, "Level 3 reset"},
    {ELNRNG, "Link number out of range"},
    {EUNATCH, "Protocol driver not attached"},
    {ENOCSI, "No CSI structure available"},
    {EL2HLT, "Level 2 halted"},
    {EBADE, "Invalid exchange"},
    {EBADR, "Invalid request descriptor"},
    {EXFULL, "Exchange full"},
    {ENOANO, "No anode"},
    {EBADRQC, "Invalid request code"},
    {EBADSLT, "Invalid slot"},
    {EBFONT, "Bad font file format"},
    {ENONET, "Machine is not on the network"},
    {ENOPKG, "Package not installed"},
    {EREMOTE, "Object is remote"},
    {EADV, "Advertise error"},
    {ESRMNT, "Srmount error"},
    {ECOMM, "Communication error on send"},
    {EDOTDOT, "RFS specific error"},
    {ENOTUNIQ, "Name not unique on network"},
    {EBADFD, "File descriptor in bad state"},
    {EREMCHG, "Remote address changed"},
    {ELIBACC, "Can not access a needed shared library"},
    {ELIBBAD, "Accessing a corrupted shared library"},
    {ELIBSCN, ".lib section in a.out corrupted"},
    {ELIBMAX, "Attempting to link in too many shared libraries"},
    {ELIBEXEC, "Cannot exec a shared library directly"},
    {ESTRPIPE, "Streams pipe error"},
    {EUSERS, "Too many users"},
    {ESOCKTNOSUPPORT, "Socket type not supported"},
    {EPFNOSUPPORT, "Protocol family not supported"},
    {ESHUTDOWN, "Cannot send after transport endpoint shutdown"},
    {ETOOMANYREFS, "Too many references: cannot splice"},
    {ESTALE, "Stale file handle"},
    {EDQUOT, "Disk quota exceeded"},
    {ENOMEDIUM, "No medium found"},
};

/* newlib's hook: a message for errnum, or NULL (then strerror gives ""). */
char *_user_strerror(int errnum, int internal, int *errptr);
char *_user_strerror(int errnum, int internal, int *errptr)
{
	(void)internal;
	(void)errptr;
	for (size_t i = 0; i < sizeof errno_messages / sizeof errno_messages[0]; i++)
		if (errno_messages[i].newlib_value == errnum)
			return (char *)errno_messages[i].message;
	return NULL;
}
