/*
 * The release of microScope this kernel is, for the banner, `version` and
 * anything else that reports it.
 */
#ifndef KERNEL_VERSION_H
#define KERNEL_VERSION_H

#define MICROSCOPE_VERSION "0.1"

#endif
