// `bekc pack`'s pure parts (package/pack.hpp): the default architectures and
// the default name.
#include <catch2/catch.hpp>

#include "package/pack.hpp"

using namespace bekc;

TEST_CASE("pack: the default archs are every real one nvcc lists that JAX runs on", "[pack]") {
    // nvcc 13.0's --list-gpu-code; older releases list Maxwell and arch-specific codes too.
    CHECK(pack_archs_from("sm_75\nsm_80\nsm_86\nsm_87\nsm_88\nsm_89\nsm_90\nsm_100\nsm_103\n"
                          "sm_110\nsm_120\nsm_121\n") ==
          "sm_75,sm_80,sm_86,sm_87,sm_88,sm_89,sm_90,sm_100,sm_103,sm_110,sm_120,sm_121");
    CHECK(pack_archs_from("sm_50\nsm_52\nsm_90a\ncompute_90\nsm_90\n") == "sm_52,sm_90");
    CHECK(pack_archs_from("") == "");
    CHECK(pack_archs_from("nvcc fatal: unknown option\n") == "");
}

TEST_CASE("pack: the default name is the output's file name, made a valid name", "[pack]") {
    CHECK(default_pack_name("/opt/packs/be-kernels") == "be_kernels");
    CHECK(default_pack_name("be-kernels-1.tar.gz") == "be_kernels_1");
    CHECK(default_pack_name("dist/") == "pack");
    CHECK(default_pack_name("kernels") == "kernels");
}
