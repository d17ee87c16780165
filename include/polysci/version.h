/* polysci — versions. PS_API_VERSION changes only on incompatible API/ABI changes. */
#ifndef POLYSCI_VERSION_H
#define POLYSCI_VERSION_H

#include "polysci/export.h"

#ifdef __cplusplus
extern "C" {
#endif

#define PS_VERSION_MAJOR 0
#define PS_VERSION_MINOR 1
#define PS_VERSION_PATCH 0
#define PS_API_VERSION 1

/* "0.1.0"; the library's version (may differ from the header it was compiled against). */
PS_API const char *ps_version(void);
/* PS_API_VERSION of the library actually linked. */
PS_API int ps_api_version(void);

#ifdef __cplusplus
}
#endif
#endif
