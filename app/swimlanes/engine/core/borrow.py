"""Views of the core's fixed tables without reference counting.

numba counts references to every array it passes between functions with atomic instructions,
which took over half of the compiled loop's time (its helpers each take a dozen tables). A
borrowed view has no memory owner, so numba's reference counting skips it; the tables stay alive
because the Python caller holds them for the whole call. Only for arrays that outlive the call
and are never returned to Python.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from numba.core import types
from numba.extending import intrinsic
from numba.np.arrayobj import make_array, populate_array


@intrinsic
def _borrowed(typingctx: Any, array: Any) -> Any:
    """``array`` as a view with no memory owner (see the module docstring)."""
    if not isinstance(array, types.Array):
        return None

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        source = make_array(array)(context, builder, value=args[0])
        view = make_array(array)(context, builder)
        populate_array(
            view,
            data=source.data,
            shape=source.shape,
            strides=source.strides,
            itemsize=source.itemsize,
            meminfo=None,
        )
        return view._getvalue()

    return array(array), codegen


#: ``borrowed(array)`` in compiled code (typed for callers: numba passes the typing context).
borrowed = cast(Callable[[Any], Any], _borrowed)
