/* polysci — symbol export. Only functions marked PS_API are part of the ABI. */
#ifndef POLYSCI_EXPORT_H
#define POLYSCI_EXPORT_H

#if defined(__GNUC__)
#define PS_API __attribute__((visibility("default")))
#else
#define PS_API
#endif

#endif
