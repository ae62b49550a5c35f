"""What the CUDA driver reads from a cubin when it loads a kernel: its registers per thread
(``CU_FUNC_ATTRIBUTE_NUM_REGS``) and its stack frame (``CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES``),
for the emulated ``load_binary`` (Triton's ``CompiledKernel.n_regs``/``n_spills``, which
Inductor's reductions read to halve their R blocks).

The layout is the one ``tilefit-core``'s ``resources::cubin`` reads, checked against the driver
there (``tilefit verify``): ``.text.K``'s ``sh_info`` holds K's symbol index (low 24 bits) and, up
to sm_89, its register count (high byte); the global ``.nv.info`` holds ``EIATTR_REGCOUNT`` and
``EIATTR_FRAME_SIZE`` records keyed by that index. A test compares the two readers on the same
cubins. A binary this cannot read raises :class:`CubinError`, never a guess.
"""

import struct

EM_CUDA = 190
EIFMT_NVAL, EIFMT_BVAL, EIFMT_HVAL, EIFMT_SVAL = 1, 2, 3, 4
EIATTR_FRAME_SIZE = 0x11
EIATTR_REGCOUNT = 0x2F


class CubinError(ValueError):
    """A cubin that cannot be read: what is wrong with it."""


def _unpack(fmt, data, at, what):
    try:
        return struct.unpack_from(fmt, data, at)
    except struct.error:
        raise CubinError(f"the binary is truncated: {what} runs past its end") from None


def _sections(data):
    """``{name: (sh_info, bytes)}`` of a little-endian ELF64 cubin."""
    if data[:4] != b"\x7fELF" or len(data) < 64:
        raise CubinError("not an ELF file")
    if data[4] != 2 or data[5] != 1:
        raise CubinError("not a little-endian ELF64 file")
    (machine,) = _unpack("<H", data, 18, "the ELF header")
    if machine != EM_CUDA:
        raise CubinError(
            f"expected a cubin (EM_CUDA, 190), found ELF machine {machine}"
        )
    (shoff,) = _unpack("<Q", data, 40, "the ELF header")
    shentsize, shnum, shstrndx = _unpack("<HHH", data, 58, "the ELF header")
    headers = []
    for i in range(shnum):
        at = shoff + i * shentsize
        name, _type, _flags, _addr, offset, size, _link, info = _unpack(
            "<IIQQQQII", data, at, "a section header"
        )
        headers.append((name, offset, size, info))
    if shstrndx >= len(headers):
        raise CubinError("the binary is malformed: no section-name table")
    _, names_at, names_size, _ = headers[shstrndx]
    names = data[names_at : names_at + names_size]
    out = {}
    for name, offset, size, info in headers:
        end = names.find(b"\0", name)
        if end < 0:
            raise CubinError(
                "the binary is malformed: a section name runs past its table"
            )
        if offset + size > len(data):
            raise CubinError("the binary is truncated: a section runs past its end")
        out[names[name:end].decode("utf-8", "replace")] = (
            info,
            data[offset : offset + size],
        )
    return out


def _keyed(info, attribute, symbol):
    """The value of the global ``[symbol index, value]`` record of ``attribute`` for ``symbol``."""
    at = 0
    while at + 4 <= len(info):
        fmt, attr, short = (
            info[at],
            info[at + 1],
            _unpack("<H", info, at + 2, "a record")[0],
        )
        if fmt in (EIFMT_NVAL, EIFMT_BVAL, EIFMT_HVAL):
            at += 4
            continue
        if fmt != EIFMT_SVAL:
            raise CubinError(
                f"the binary is malformed: an .nv.info record of unknown format {fmt:#x} "
                f"at byte {at}"
            )
        payload = info[at + 4 : at + 4 + short]
        if len(payload) < short:
            raise CubinError(
                "the binary is truncated: an .nv.info record runs past its end"
            )
        if attr == attribute and len(payload) >= 8:
            key, value = struct.unpack_from("<II", payload, 0)
            if key == symbol:
                return value
        at += 4 + short
    return None


def load_attributes(data, kernel):
    """``(registers per thread, local bytes per thread)`` of ``kernel`` in the cubin ``data``,
    as the driver reports them once it has loaded the module."""
    sections = _sections(bytes(data))
    text = sections.get(f".text.{kernel}")
    if text is None:
        found = sorted(n[len(".text.") :] for n in sections if n.startswith(".text."))
        raise CubinError(
            f"no kernel `{kernel}` in the binary (it has: {', '.join(found)})"
        )
    symbol, high_byte = text[0] & 0xFFFFFF, text[0] >> 24
    info = sections.get(".nv.info", (0, b""))[1]
    registers = _keyed(info, EIATTR_REGCOUNT, symbol)
    if registers is None:
        if not high_byte:
            raise CubinError(
                f"no register count for `{kernel}` (no EIATTR_REGCOUNT, and sh_info's high "
                "byte is 0)"
            )
        registers = high_byte
    frame = _keyed(info, EIATTR_FRAME_SIZE, symbol) or 0
    return registers, frame
