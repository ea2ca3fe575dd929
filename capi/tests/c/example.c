/* The example of capi/README.md, built by `cargo xtask capi-test` with pkg-config and CMake. */
#include <stdio.h>
#include "hsakmt/hsakmt.h"

int main(void)
{
    HsaVersionInfo v;
    if (hsaKmtOpenKFD() != HSAKMT_STATUS_SUCCESS || hsaKmtGetVersion(&v) != HSAKMT_STATUS_SUCCESS)
        return 1;
    printf("KFD %u.%u\n", v.KernelInterfaceMajorVersion, v.KernelInterfaceMinorVersion);
    return hsaKmtCloseKFD();
}
