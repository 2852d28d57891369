"""The shared libtinyseq beside this file, through ctypes (api/tinyseq.h).

Every binding is declared once here with its argument and result types, so a
wrong call is a Python TypeError, never a crash. `call` turns a status into
the exception of its kind, carrying the library's message.
"""
import ctypes
import os

_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "libtinyseq.so")
try:
    lib = ctypes.CDLL(_PATH)
except OSError as e:  # pragma: no cover - a package copied without its library
    raise ImportError(f"tinyseq: cannot load {_PATH}: {e} (build it with cmake, docs/python.md)") from e


class Error(Exception):
    """A tinyseq failure: `status` is the library's code, str() its message."""

    def __init__(self, message, status=None):
        super().__init__(message)
        self.status = status


class FileError(Error, OSError):
    """A file could not be opened, read or written (TS_ERR_IO)."""


class FormatError(Error, ValueError):
    """Malformed input: a checkpoint, a corpus line, a sentence (TS_ERR_FORMAT, TS_ERR_SHAPE)."""


class ArgumentError(Error, ValueError):
    """A bad argument or option value (TS_ERR_ARG)."""


class OutOfMemory(Error, MemoryError):
    """The library could not allocate (TS_ERR_NOMEM, TS_ERR_ARENA)."""


# Shown as tinyseq.FormatError (where `import tinyseq` finds them), not tinyseq._capi.FormatError.
for _kind in (Error, FileError, FormatError, ArgumentError, OutOfMemory):
    _kind.__module__ = "tinyseq"

# tensor/status.h's codes and the exception each raises.
_KINDS = {-1: OutOfMemory, -2: OutOfMemory, -3: FormatError, -4: ArgumentError, -5: FileError,
          -6: FormatError, -7: Error, -8: Error}

c_char_pp = ctypes.POINTER(ctypes.c_char_p)
c_text_p = ctypes.POINTER(ctypes.c_void_p)  # a char * the library malloc'd: read, then tinyseq_free
LINE_FN = ctypes.CFUNCTYPE(None, ctypes.c_char_p, ctypes.c_int, ctypes.c_void_p)


class Array(ctypes.Structure):
    _fields_ = [("data", ctypes.POINTER(ctypes.c_double)), ("ndim", ctypes.c_int), ("dims", ctypes.c_int * 3)]


_DOUBLE_P = ctypes.POINTER(ctypes.c_double)
_SIGNATURES = {
    "tinyseq_version": (ctypes.c_char_p, []),
    "tinyseq_last_error": (ctypes.c_char_p, []),
    "tinyseq_free": (None, [ctypes.c_void_p]),
    "tinyseq_load": (ctypes.c_int, [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p)]),
    "tinyseq_model_free": (None, [ctypes.c_void_p]),
    "tinyseq_translate": (ctypes.c_int, [ctypes.c_void_p, c_char_pp, ctypes.c_int, ctypes.c_int, ctypes.c_double,
                                         c_text_p]),
    "tinyseq_attend": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_double, ctypes.c_int,
                                      c_text_p]),
    "tinyseq_explain": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_double, ctypes.c_int,
                                       ctypes.c_char_p, ctypes.c_int, c_text_p]),
    "tinyseq_info": (ctypes.c_int, [ctypes.c_void_p, c_text_p]),
    "tinyseq_eval": (ctypes.c_int, [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_int,
                                    c_text_p]),
    "tinyseq_toy_corpus": (ctypes.c_int, [ctypes.c_long, ctypes.c_long, ctypes.c_char_p, ctypes.c_char_p]),
    "tinyseq_train_dir": (ctypes.c_int, [c_char_pp, c_char_pp, ctypes.c_int, LINE_FN, ctypes.c_void_p,
                                         ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_long),
                                         ctypes.POINTER(ctypes.c_void_p)]),
    "tinyseq_arch_has": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_char_p]),
    "tinyseq_train_options": (ctypes.c_int, [c_text_p]),
    "tinyseq_gradcheck": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p,
                                         ctypes.c_double, ctypes.c_long, ctypes.c_double, ctypes.c_double, c_text_p]),
    "tinyseq_op": (ctypes.c_int, [ctypes.c_char_p, ctypes.POINTER(Array), ctypes.c_int, _DOUBLE_P, ctypes.c_size_t,
                                  _DOUBLE_P, ctypes.POINTER(_DOUBLE_P)]),
    "tinyseq_op_shape": (ctypes.c_int, [ctypes.c_char_p, ctypes.POINTER(Array), ctypes.c_int,
                                        ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int)]),
}
for _name, (_restype, _argtypes) in _SIGNATURES.items():
    _f = getattr(lib, _name)
    _f.restype, _f.argtypes = _restype, _argtypes


def raise_for(status, context=None):
    """Raises the exception of a negative status with the library's message."""
    message = lib.tinyseq_last_error().decode("utf-8", "replace")
    if context:
        message = f"{context}: {message}" if message else context
    raise _KINDS.get(status, Error)(message, status)


def call(name, *args, context=None):
    """Calls tinyseq_<name>; returns its status when not negative, else raises."""
    status = getattr(lib, "tinyseq_" + name)(*args)
    if status < 0:
        raise_for(status, context)
    return status


def call_text(name, *args, context=None):
    """Calls a function whose last argument receives malloc'd text; returns the text as str."""
    text = ctypes.c_void_p()
    status = call(name, *args, ctypes.byref(text), context=context)
    try:
        return status, ctypes.string_at(text.value).decode("utf-8") if text.value else ""
    finally:
        lib.tinyseq_free(text)


def encode(text, what):
    """A str argument as the UTF-8 bytes C takes; TypeError for anything else, ValueError for a NUL."""
    if isinstance(text, os.PathLike):
        text = os.fspath(text)
    if not isinstance(text, str):
        raise TypeError(f"{what} must be a str, not {type(text).__name__}")
    if "\0" in text:
        raise ValueError(f"{what} holds a NUL character")
    return text.encode("utf-8", "surrogateescape")

STOPPED = 1  # TINYSEQ_STOPPED: a run stopped by a signal, saved
