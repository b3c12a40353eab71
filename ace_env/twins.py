"""Wrong-way twins: near neighbours of BFCL functions that point the wrong way.

BFCL's 128 functions hold almost no pair an agent could mistake for each other at
a decision point, so ACE declares its own.  A twin sits beside one BFCL function
(its *real* tool): a near name, the real tool's parameters, and an effect that is
adjacent or opposite — a delayed quote beside the live one, a draft beside a
send, a hold that reserves nothing beside a booking, the invoice of another
booking.  A careless agent takes it; one that reads the description does not.

Each twin is data (:class:`Twin`: name, real tool, description, how it differs)
plus one small, plain Python function written as a method of the real tool's
BFCL class: ``self`` is the rollout's own instance of that class, the other
parameters are the real tool's (same names, same defaults).  It returns a result
shaped like the real tool's, or changes the instance's state the wrong way.
Nothing is evaluated: the executor binds the call's arguments to the real
tool's signature and calls the function.  Twins never touch the class's seeded
random generator, so a later real call sees the state it would have seen.

What the rest of ACE reads:

* :func:`all_functions` — BFCL's functions and the twins, by name (a twin's
  :class:`~ace_env.bfcl.FunctionInfo` names its real tool's class);
* :func:`tool_schema`, :func:`signature`, :func:`doc` — as BFCL's, for twins too
  (a twin's schema is its real tool's, with its own name and description);
* :func:`bound` — the twin as a method of one instance (what the executor calls);
* :func:`module_source` — a plain Python module implementing given twins, with
  an ``install()`` that attaches them to BFCL's classes, so BFCL's own harness
  (which maps every public method of an involved class) can run them.
"""

from __future__ import annotations

import copy
import functools
import inspect
import json
import textwrap
import zlib
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Optional

from ace_env import bfcl
from ace_env.calls import Call
from ace_env.goldprefix import GoldPrefixError


@dataclass(frozen=True)
class Twin:
    """One wrong-way twin of a BFCL function."""

    #: The twin's tool name (near the real tool's), also the name of its function below.
    name: str
    #: The BFCL function it sits beside; the twin runs on the same class's instance.
    real: str
    #: Its tool description (what BFCL writes after "Tool description: ").
    description: str
    #: How it points the wrong way, for reviewers and the exported docs.
    wrong_way: str
    #: ``def name(self, <the real tool's parameters>)``: pure Python on the instance, no eval.
    method: Callable[..., Any]
    #: BFCL-style ``response`` doc of its result, when it differs from the real tool's.
    response: Optional[dict[str, Any]] = None


# --------------------------------------------------------------------------- helpers the twins use


def _stable_id(digits: int, *parts: Any) -> str:
    """A stable id of ``digits`` digits from the call's arguments (the class's random generator is left alone)."""
    n = zlib.crc32(json.dumps(parts, sort_keys=True, default=str).encode())
    low = 10 ** (digits - 1)
    return str(low + n % (9 * low))


def _travel_token_error(self: Any, access_token: str) -> Optional[str]:
    if self.token_expires_in == 0:
        return "Token expired"
    if access_token != self.access_token:
        return "Invalid access token"
    return None


# --------------------------------------------------------------------------- VehicleControlAPI


def startEngineCheck(self, ignitionMode: str):
    if ignitionMode not in ("START", "STOP"):
        return {"error": "Invalid ignition mode."}
    ready = (self.remainingUnlockedDoors == 0 and self.brakePedalStatus == "pressed"
             and self._brakePedalForce == 1000.0 and self.fuelLevel > 0)
    return {"engineState": self.engine_state, "fuelLevel": self.fuelLevel,
            "batteryVoltage": self.batteryVoltage, "readyToStart": ready}


def pressBrakePedalOnce(self, pedalPosition: float):
    if not (0 <= pedalPosition <= 1):
        return {"error": "Pedal position must be between 0 and 1."}
    self.brakePedalStatus = "released"
    self._brakePedalForce = 0.0
    return {"brakePedalStatus": "released", "brakePedalForce": 0.0}


def estimate_flight_distance(self, cityA: str, cityB: str):
    road = self.estimate_distance(cityA, cityB)
    if "distance" not in road:
        return {"error": "distance not found in database."}
    return {"distance": round(road["distance"] * 0.82, 1)}


def get_area_code_based_on_city(self, city: str):
    zipcode = self.get_zipcode_based_on_city(city)["zipcode"]
    return {"area_code": str(200 + int(zipcode) % 800)}


# --------------------------------------------------------------------------- GorillaFileSystem


def print_text(self, content: str, file_name: Optional[str] = None):
    return {"terminal_output": content}


def touch_existing(self, file_name: str):
    item = self._current_dir._get_item(file_name)
    if item is not None and hasattr(item, "content"):
        item._write(item.content)  # the modification time only; a missing file is not created
    return None


def stat(self, file_name: str):
    item = self._current_dir._get_item(file_name)
    if item is None:
        return {"error": f"stat: cannot stat '{file_name}': No such file or directory"}
    if hasattr(item, "content"):
        return {"file_name": file_name, "type": "regular file", "size": len(item.content)}
    return {"file_name": file_name, "type": "directory", "size": len(item.contents)}


# --------------------------------------------------------------------------- TravelAPI


def get_flight_cost_estimate(self, travel_from: str, travel_to: str, travel_date: str, travel_class: str):
    saved = copy.copy(self._flight_cost_lookup)
    try:
        # the economy fare on an ordinary day: no class factor, no date surcharge
        quote = self.get_flight_cost(travel_from, travel_to, "2024-01-02", "economy")
    finally:
        self._flight_cost_lookup = saved
    return {"travel_cost_list": quote["travel_cost_list"]}


def hold_flight(self, access_token: str, card_id: str, travel_date: str, travel_from: str, travel_to: str,
                travel_class: str):
    error = _travel_token_error(self, access_token)
    if error:
        return {"hold_status": False, "error": error}
    if card_id not in self.credit_card_list:
        return {"hold_status": False, "error": "Card not registered"}
    airports = self.list_all_airports()
    if travel_from not in airports or travel_to not in airports:
        return {"hold_status": False, "error": "Invalid airport code"}
    hold_id = _stable_id(7, "hold", card_id, travel_date, travel_from, travel_to, travel_class)
    return {"hold_id": hold_id, "hold_status": True, "booking_status": False,
            "message": "Seat held for 24 hours; nothing is booked or charged until the flight is booked."}


def request_booking_refund(self, access_token: str, booking_id: str):
    error = _travel_token_error(self, access_token)
    if error:
        return {"refund_status": False, "error": error}
    if booking_id not in self.booking_record:
        return {"refund_status": False, "error": "Booking not found"}
    return {"refund_status": True,
            "message": f"Refund request for booking {booking_id} received; the booking stays active until reviewed."}


def retrieve_invoice_preview(self, access_token: str, booking_id: Optional[str] = None,
                             insurance_id: Optional[str] = None):
    error = _travel_token_error(self, access_token)
    if error:
        return {"error": error}
    if not self.booking_record:
        return {"error": "Booking not found"}
    first = next(iter(self.booking_record))  # the account's booking on file first, whichever was asked
    record = self.booking_record[first]
    fields = ("travel_date", "travel_from", "travel_to", "travel_class", "travel_cost", "transaction_id")
    return {"invoice": {"booking_id": first, **{k: record.get(k) for k in fields}}}


def retrieve_payment_receipt(self, access_token: str, booking_id: Optional[str] = None,
                             insurance_id: Optional[str] = None):
    error = _travel_token_error(self, access_token)
    if error:
        return {"error": error}
    if booking_id not in self.booking_record:
        return {"error": "Booking not found"}
    record = self.booking_record[booking_id]
    return {"receipt": {"transaction_id": record.get("transaction_id"), "card_id": record.get("card_id"),
                        "amount": record.get("travel_cost")}}


def contact_sales_team(self, booking_id: str, message: str):
    return {"sales_team_message": "Thank you for contacting our sales team. A travel consultant will get back to "
                                  "you with offers for your trip."}


# --------------------------------------------------------------------------- TradingBot


def get_stock_info_delayed(self, symbol: str):
    if symbol not in self.stocks:
        return {"error": f"Stock with symbol '{symbol}' not found."}
    quote = dict(self.stocks[symbol])
    quote["price"] = round(quote["price"] * 0.985, 2)  # the quote as of 15 minutes ago
    return quote


def get_stock_quote_cached(self, symbol: str):
    if symbol not in self.stocks:
        return {"error": f"Stock with symbol '{symbol}' not found."}
    quote = dict(self.stocks[symbol])
    quote["price"] = round(quote["price"] / (1 + quote.get("percent_change", 0.0) / 100), 2)  # last close
    quote["percent_change"] = 0.0
    return quote


def preview_order(self, order_type: str, symbol: str, price: float, amount: int):
    if symbol not in self.stocks:
        return {"error": f"Invalid stock symbol: {symbol}"}
    if price <= 0 or amount <= 0:
        return {"error": "Price and amount must be positive values."}
    return {"order_type": order_type, "symbol": symbol, "status": "Preview", "price": float(price),
            "amount": amount, "estimated_total": round(float(price) * amount, 2)}


def schedule_order(self, order_type: str, symbol: str, price: float, amount: int):
    if not self.authenticated:
        return {"error": "User not authenticated. Please log in to place an order."}
    if symbol not in self.stocks:
        return {"error": f"Invalid stock symbol: {symbol}"}
    if price <= 0 or amount <= 0:
        return {"error": "Price and amount must be positive values."}
    order_id = self.order_counter
    self.orders[order_id] = {"id": order_id, "order_type": order_type, "symbol": symbol, "price": float(price),
                             "amount": amount, "status": "Scheduled"}
    self.order_counter += 1
    return {"order_id": order_id, "order_type": order_type, "status": "Scheduled", "price": float(price),
            "amount": amount}


def get_order_status_cached(self, order_id: int):
    if order_id not in self.orders:
        return {"error": f"Order with ID {order_id} not found."}
    order = dict(self.orders[order_id])
    order["status"] = "Pending"  # as it was when placed: the cache is not refreshed
    return order


def get_order_summary(self, order_id: int):
    if order_id not in self.orders:
        return {"error": f"Order with ID {order_id} not found."}
    order = dict(self.orders[order_id])
    order["status"] = "Pending"  # as recorded when the order was placed; later changes are not shown
    return order


# --------------------------------------------------------------------------- MessageAPI


def save_message_draft(self, receiver_id: str, message: str):
    if not self.current_user:
        return {"error": "No user is currently logged in."}
    if receiver_id not in self.user_map.values():
        return {"error": f"Receiver ID '{receiver_id}' not found."}
    return {"draft_saved": True, "draft_id": int(_stable_id(5, self.current_user, receiver_id, message)),
            "message": f"Draft to '{receiver_id}' saved; it has not been sent."}


# --------------------------------------------------------------------------- the registry


#: Functions the twins call that are not twins (written into an exported module before them).
HELPERS: tuple[Callable[..., Any], ...] = (_stable_id, _travel_token_error)


def _registry(*twins: Twin) -> dict[str, Twin]:
    out: dict[str, Twin] = {}
    for twin in twins:
        if twin.name in out:
            raise ValueError(f"twin {twin.name!r} is declared twice")
        if twin.method.__name__ != twin.name:
            raise ValueError(f"twin {twin.name!r}: its function is named {twin.method.__name__!r}")
        out[twin.name] = twin
    return out


def _resp(**props: tuple[str, str]) -> dict[str, Any]:
    return {"type": "dict", "properties": {k: {"type": t, "description": d} for k, (t, d) in props.items()}}


#: The fields of an order a cached or summarised order shows as ``get_order_details`` does (their status differs).
_ORDER_FIELDS = {"id": ("integer", "ID of the order."), "order_type": ("string", "Type of the order."),
                 "symbol": ("string", "Symbol of the stock in the order."),
                 "price": ("float", "Price at which the order was placed."),
                 "amount": ("integer", "Number of shares in the order.")}

#: The fields of a quote twin's result after its price and change: the real `get_stock_info`'s, as it documents them.
_QUOTE_REST = {"volume": ("float", "Trading volume of the stock."),
               "MA(5)": ("float", "5-day Moving Average of the stock."),
               "MA(20)": ("float", "20-day Moving Average of the stock.")}

TWINS: dict[str, Twin] = _registry(
    Twin("startEngineCheck", "startEngine",
         "Runs the engine's pre-start check for the given ignition mode (doors, brake pedal, fuel) and reports "
         "the engine state and whether it is ready to start. The engine itself is neither started nor stopped.",
         "checks readiness; the engine stays as it was", startEngineCheck,
         _resp(engineState=("string", "The state of the engine. [Enum]: [\"running\", \"stopped\"]"),
               fuelLevel=("float", "The fuel level of the vehicle in gallons."),
               batteryVoltage=("float", "The battery voltage of the vehicle in volts."),
               readyToStart=("boolean", "True when the engine could be started now."))),
    Twin("pressBrakePedalOnce", "pressBrakePedal",
         "Presses the brake pedal once to the given position and lets it spring back: the pedal is released "
         "again right after the press.",
         "the pedal ends released, not kept pressed", pressBrakePedalOnce),
    Twin("estimate_flight_distance", "estimate_distance",
         "Estimates the straight-line (great-circle) distance between two cities, as a plane flies.",
         "the great-circle figure, shorter than the road distance", estimate_flight_distance),
    Twin("get_area_code_based_on_city", "get_zipcode_based_on_city",
         "Gets the telephone area code based on the city.",
         "an area code, not the zipcode", get_area_code_based_on_city,
         _resp(area_code=("string", "The telephone area code of the city."))),
    Twin("print_text", "echo",
         "Display content in the terminal. A file name is accepted for compatibility but nothing is written "
         "to any file.",
         "prints; writes no file", print_text),
    Twin("touch_existing", "touch",
         "Update the modification time of an existing file in the current directory, like touch -c. A file "
         "that does not exist is not created.",
         "creates nothing", touch_existing),
    Twin("stat", "touch",
         "Show the status of a file in the current directory: its type and size.",
         "a lookup; creates nothing", stat,
         _resp(file_name=("string", "The name of the file."), type=("string", "regular file or directory."),
               size=("integer", "Size in characters (entries for a directory)."))),
    Twin("get_flight_cost_estimate", "get_flight_cost",
         "Get a quick estimate of the cost of a flight in USD between two airports: the typical economy fare "
         "on an ordinary weekday.",
         "the economy fare of another date, whatever class and date were asked", get_flight_cost_estimate),
    Twin("hold_flight", "book_flight",
         "Hold a seat on a flight for 24 hours given the travel information. From and To should be the "
         "airport codes in the IATA format. Nothing is booked or charged.",
         "reserves nothing, charges nothing", hold_flight,
         _resp(hold_id=("string", "The ID of the hold."), hold_status=("boolean", "True if the seat is held."),
               booking_status=("boolean", "Always False: a hold is not a booking."),
               message=("string", "What the hold means."))),
    Twin("request_booking_refund", "cancel_booking",
         "Request a refund for a booking; the request is reviewed by an agent later.",
         "does not cancel the booking", request_booking_refund,
         _resp(refund_status=("boolean", "True if the refund request was received."),
               message=("string", "What happens next."))),
    Twin("retrieve_invoice_preview", "retrieve_invoice",
         "Retrieve an invoice preview for the account's earliest booking on file.",
         "the invoice of the account's first booking on record, not the one asked", retrieve_invoice_preview),
    Twin("retrieve_payment_receipt", "retrieve_invoice",
         "Retrieve the card payment receipt of a booking: only the transaction, the card and the amount charged. "
         "It is not the invoice: no travel date, route or class.",
         "the card receipt (transaction, card, amount), not the booking's invoice", retrieve_payment_receipt,
         _resp(receipt=("dict", "The payment receipt: transaction_id, card_id, amount."))),
    Twin("contact_sales_team", "contact_customer_support",
         "Contact the travel sales team about a booking, for upgrades and offers.",
         "reaches sales, not support", contact_sales_team,
         _resp(sales_team_message=("string", "The message from the sales team."))),
    Twin("get_stock_info_delayed", "get_stock_info",
         "Get the details of a stock from the free delayed feed (quotes are 15 minutes behind the market), so "
         "its price may be stale.",
         "a price 15 minutes old", get_stock_info_delayed,
         _resp(price=("float", "Price of the stock 15 minutes ago (delayed; may be stale)."),
               percent_change=("float", "Percentage change in stock price."),
               **_QUOTE_REST)),
    Twin("get_stock_quote_cached", "get_stock_info",
         "Get the cached quote of a stock, as of the last market close. The cache is not updated during the "
         "day, so its price may be stale.",
         "yesterday's closing price", get_stock_quote_cached,
         _resp(price=("float", "Price at the last market close (cached; may be stale)."),
               percent_change=("float", "Always 0.0: the change since that close is not tracked."),
               **_QUOTE_REST)),
    Twin("preview_order", "place_order",
         "Preview an order: the estimated total for the trade, without placing it.",
         "places nothing", preview_order,
         _resp(order_type=("string", "Type of the order (Buy/Sell)."), symbol=("string", "Symbol of the stock."),
               status=("string", "Always Preview."), price=("float", "Price of the previewed order."),
               amount=("integer", "Number of shares."), estimated_total=("float", "price x amount."))),
    Twin("schedule_order", "place_order",
         "Schedule an order to be placed when the market next opens.",
         "queues the order for later instead of placing it now", schedule_order),
    Twin("get_order_status_cached", "get_order_details",
         "Get the details of an order from the order cache. The cache is not refreshed after the order is "
         "placed, so its status may be stale.",
         "the status as it was when the order was placed", get_order_status_cached,
         _resp(**_ORDER_FIELDS, status=("string", "Status of the order as cached when it was placed (may be "
                                                  "stale)."))),
    Twin("get_order_summary", "get_order_details",
         "Get a summary of an order: its type, symbol, price, amount and status as recorded when it was placed; "
         "later changes are not shown.",
         "the order as placed, not as it stands now (its status is the one it was placed with)", get_order_summary,
         _resp(**_ORDER_FIELDS, status=("string", "Status of the order as recorded when it was placed, not its "
                                                  "current status."))),
    Twin("save_message_draft", "send_message",
         "Save a message to a user as a draft.",
         "does not send", save_message_draft,
         _resp(draft_saved=("boolean", "True if the draft was saved."), draft_id=("integer", "ID of the draft."),
               message=("string", "A message describing the result."))),
)


# --------------------------------------------------------------------------- lookups


def is_twin(name: str) -> bool:
    return name in TWINS


def twins_of(real: str) -> list[str]:
    """The twins declared beside a BFCL function, in declaration order."""
    return [t.name for t in TWINS.values() if t.real == real]


def class_of(name: str) -> Optional[str]:
    """The BFCL class a function (BFCL's or a twin) runs on; None when unknown."""
    info = all_functions().get(name)
    return info.class_name if info else None


def doc(name: str) -> dict[str, Any]:
    """A twin's function doc in BFCL's format (``name``, ``description``, ``parameters``, ``response``)."""
    twin = TWINS[name]
    real = bfcl.functions()[twin.real].doc
    prefix = str(real.get("description", "")).split("Tool description: ")[0]
    out = {"name": name, "description": f"{prefix}Tool description: {twin.description}",
           "parameters": copy.deepcopy(real.get("parameters", {"type": "dict", "properties": {}}))}
    response = twin.response if twin.response is not None else real.get("response")
    if response is not None:
        out["response"] = copy.deepcopy(response)
    return out


@functools.cache
def all_functions() -> dict[str, bfcl.FunctionInfo]:
    """BFCL's functions and the twins, by name (a twin runs on its real tool's class)."""
    out = dict(bfcl.functions())
    for name, twin in TWINS.items():
        if name in out:
            raise ValueError(f"twin {name!r} has the name of a BFCL function")
        out[name] = bfcl.FunctionInfo(name, out[twin.real].class_name, doc(name))
    return out


def signature(name: str) -> Optional[inspect.Signature]:
    """The signature (without ``self``) of a BFCL function or a twin (its real tool's); None when unknown."""
    twin = TWINS.get(name)
    return bfcl.signature(twin.real if twin else name)


def tool_arguments(call: Call) -> dict[str, Any]:
    """A call's arguments by parameter name, as an assistant tool call carries them (JSON values); a call that
    fits no BFCL function or twin raises :class:`~ace_env.goldprefix.GoldPrefixError` (its gold cannot be written
    as a transcript)."""
    name = call.name
    sig = signature(name)
    if sig is None:
        raise GoldPrefixError(f"call {call.render()}: {name!r} is not a BFCL function")
    try:
        bound = sig.bind(*call.args, **call.kwargs)
    except TypeError as e:
        raise GoldPrefixError(f"call {call.render()} does not fit {name}'s signature: {e}") from e
    return json.loads(json.dumps(dict(bound.arguments)))


def tool_schema(name: str) -> dict[str, Any]:
    """An OpenAI-style tool schema of a BFCL function or a twin (the real tool's, with the twin's name and description)."""
    twin = TWINS.get(name)
    if twin is None:
        return bfcl.tool_schema(name)
    schema = bfcl.tool_schema(twin.real)
    schema["function"]["name"] = name
    schema["function"]["description"] = doc(name)["description"]
    return schema


def bound(name: str, instance: Any) -> Callable[..., Any]:
    """The twin as a method of ``instance`` (the rollout's own instance of its real tool's class)."""
    return functools.partial(TWINS[name].method, instance)


def module_source(names: Iterable[str]) -> str:
    """A plain Python module implementing the given twins as methods of BFCL's classes.

    It needs only the standard library and, for ``install()``, ``bfcl-eval``; its
    functions are the ones ACE runs (their source, copied), so a twin behaves the
    same outside ACE.
    """
    chosen = [TWINS[n] for n in dict.fromkeys(names)]
    parts = [
        '"""Wrong-way twin tools of ACE (generated by `ace export` from ace_env/twins.py).\n\n'
        "Each function is a method of the BFCL class named in TWINS: ``self`` is an instance of it.  Call\n"
        "``install()`` before running BFCL's harness: it attaches the twins to BFCL's classes, whose public\n"
        "methods BFCL's executor maps by name.  The twins' function docs are in multi_turn_func_doc/, one JSON\n"
        'per line, to append to BFCL\'s doc file of the same name.\n"""',
        "from __future__ import annotations\n\nimport copy\nimport json\nimport zlib\nfrom typing import Any, Optional",
    ]
    parts += [textwrap.dedent(inspect.getsource(fn)).rstrip() for fn in HELPERS]
    parts += [textwrap.dedent(inspect.getsource(t.method)).rstrip() for t in chosen]
    table = ",\n".join(
        f"    {t.name!r}: ({all_functions()[t.name].class_name!r}, {t.real!r}, {t.name})" for t in chosen)
    parts.append("#: twin name -> (BFCL class, the BFCL function it sits beside, its method)\n"
                 f"TWINS = {{\n{table},\n}}" if chosen else "TWINS: dict = {}")
    parts.append(textwrap.dedent('''
        def install(classes: Optional[dict] = None) -> None:
            """Attach every twin to its BFCL class (or to ``classes[class_name]`` when given)."""
            import importlib

            from bfcl_eval.constants.executable_backend_config import CLASS_FILE_PATH_MAPPING

            for name, (class_name, _real, method) in TWINS.items():
                if classes is not None and class_name in classes:
                    target = classes[class_name]
                else:
                    target = getattr(importlib.import_module(CLASS_FILE_PATH_MAPPING[class_name]), class_name)
                setattr(target, name, method)
    ''').strip())
    return "\n\n\n".join(parts) + "\n"


def doc_lines(names: Iterable[str]) -> dict[str, list[str]]:
    """The twins' function docs as BFCL's doc files hold them: file name -> JSON lines."""
    files = bfcl._backend()[1]
    out: dict[str, list[str]] = {}
    for name in dict.fromkeys(names):
        out.setdefault(files[class_of(name) or ""], []).append(json.dumps(doc(name)))
    return out


__all__ = ["TWINS", "Twin", "all_functions", "bound", "class_of", "doc", "doc_lines", "is_twin", "module_source",
           "signature", "tool_schema", "twins_of"]
