from sdk.semconv import *
