"""The device code of a built library, read without a GPU or cuobjdump: the
fat binary in its .nv_fatbin section (binutils' objcopy), the cubins in it
(their ELF section tables), and the names that hold a module id."""

from __future__ import annotations

import re
import struct
import subprocess
from pathlib import Path


def anonymous_names_hidden(text: str) -> str:
    """`text` with each name made of a module id as "NS": an anonymous
    namespace's ("36_GLOBAL__N__<module id>" in a mangled name,
    "_GLOBAL__N_<module id>" elsewhere) and the one cicc gives a variable of
    internal linkage in PTX ("39_INTERNAL_<module id>..." mangled). Such a
    name holds the module id of the source it is compiled from, which bekc
    gives a split compile itself (graph/nvcc_split: nvcc_module_id) and
    cudafe++ derives otherwise."""
    # Searched again from the end of each name: its last digits may start
    # the next one's length ("..._7ee460d0" then "52_GLOBAL__N_...").
    name = re.compile(r"(\d+)(_GLOBAL__N_|_INTERNAL_)")
    out, at = [], 0
    while m := name.search(text, at):
        out.append(text[at:m.start()] + "NS")
        at = m.start() + len(m.group(1)) + int(m.group(1))
    out.append(text[at:])
    return re.sub(r"_GLOBAL__N_\w*", "NS", "".join(out))


def section(library: Path, name: str, scratch: Path) -> bytes:
    """The bytes of one section of `library`, through a file in `scratch`."""
    out = scratch / f"{library.parent.name}{name}"
    subprocess.run(["objcopy", "-O", "binary", f"--only-section={name}", str(library), str(out)],
                   check=True)
    return out.read_bytes()


def library_fatbin(library: Path, scratch: Path) -> bytes:
    """The .nv_fatbin section: every architecture's SASS and the PTX."""
    return section(library, ".nv_fatbin", scratch)


def elf_images(fatbin: bytes) -> list:
    """The device ELF images (cubins) of a fat binary, each as its sections:
    name -> bytes. PTX is compressed there; the cubins are not."""
    images, at = [], 0
    while (at := fatbin.find(b"\x7fELF", at)) >= 0:
        e = fatbin[at:]
        (shoff,) = struct.unpack_from("<Q", e, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", e, 0x3A)
        assert shentsize == 64, "a 64-bit ELF"
        headers = [struct.unpack_from("<IIQQQQ", e, shoff + i * 64) for i in range(shnum)]
        strings = e[headers[shstrndx][4]:headers[shstrndx][4] + headers[shstrndx][5]]

        def name(offset):
            return strings[offset:strings.index(b"\0", offset)].decode()

        images.append({name(h[0]): e[h[4]:h[4] + h[5]] for h in headers if h[1] != 8})
        at += shoff + shnum * 64
    return images


def sass(library: Path, scratch: Path) -> list:
    """Each cubin's code (its .text sections), by kernel name, module ids hidden."""
    return [{anonymous_names_hidden(k): v for k, v in image.items() if k.startswith(".text.")}
            for image in elf_images(library_fatbin(library, scratch))]


def device_names(library: Path, scratch: Path) -> set:
    """The names of the anonymous namespaces' kernels in the library's cubins."""
    names = set()
    for image in elf_images(library_fatbin(library, scratch)):
        names.update(k[len(".text."):] for k in image
                     if k.startswith(".text.") and "_GLOBAL__N_" in k)
    return names


def registered_names(library: Path, scratch: Path) -> set:
    """The anonymous namespaces' device names the host code hands the CUDA
    runtime (its registration strings, in .rodata): each must be a name the
    device code has, or the kernel cannot be launched."""
    return {n.decode() for n in re.findall(rb"_ZN\d+_GLOBAL__N_\w+",
                                           section(library, ".rodata", scratch))}
