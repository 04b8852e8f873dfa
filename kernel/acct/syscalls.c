/*
 * The accounting system calls (librscfl's): thin layers over acct.h.  None
 * takes a pointer: results are read from the mapped page.
 */
#include "acct/acct.h"
#include "syscall/syscall.h"

SYSCALL_DEFINE0(ms_acct_init)
{
	return acct_init_thread();
}

SYSCALL_DEFINE0(ms_acct_get_token)
{
	return acct_get_token();
}

SYSCALL_DEFINE1(ms_acct_free_token, int, token)
{
	return acct_free_token(token);
}

SYSCALL_DEFINE2(ms_acct, int, token, unsigned, flags)
{
	return acct_control(token, flags);
}

SYSCALL_DEFINE1(ms_acct_switch_token, int, token)
{
	return acct_switch_token(token);
}
