from sdk import *

from . import semconv as semconv
